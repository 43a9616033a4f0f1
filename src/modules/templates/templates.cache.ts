/**
 * The template read cache: rows by id and by (account, name), fresh against every writer (forgetTemplates).
 */
import type { Db } from "../../db/client";
import { createReadCache } from "../../db/read-cache";

/**
 * Template rows by id and by (account, name), read twice per message (the send resolves it, the dispatch
 * builds from it: 9 µs of ~260 on SQLite, two round trips on PostgreSQL). Shared, never mutated. Fresh
 * (db/read-cache.ts): this process's template writes empty it (the writers below call `forgetTemplates`);
 * other processes' writes change the data version, checked on every lookup — another process's change holds
 * for the next send (PostgreSQL: a trigger, migration-pg 0007); a rollback on the connection empties it.
 */
const templateCaches = new WeakMap<Db, ReturnType<typeof createReadCache<string, unknown>>>();
export function templateCache(db: Db) {
  let c = templateCaches.get(db);
  if (!c) templateCaches.set(db, (c = createReadCache<string, unknown>(db, { checkEveryMs: 0 })));
  return c;
}
export function forgetTemplates(db: Db): void {
  templateCache(db).invalidate();
}
