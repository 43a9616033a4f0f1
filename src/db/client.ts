/**
 * The one SQLite connection (one writer; WAL lets readers of other processes, e.g. `backup`, run beside it).
 *
 * NB! `synchronous=FULL`: NORMAL can lose acknowledged commits on power loss, and a 202 is a promise.
 *
 * Transactions: `db.tx(fn)` runs `fn` inside `BEGIN IMMEDIATE … COMMIT`. `fn` must be synchronous (bun:sqlite
 * is), so nothing else can interleave on the connection while it runs; a nested `tx` becomes a SAVEPOINT, so
 * services can compose (a route wraps a service's write together with its idempotency record).
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema";

export type Schema = typeof schema;
export type Db = BunSQLiteDatabase<Schema> & {
  $client: Database;
  /** Runs fn in one IMMEDIATE transaction (savepoint when nested). fn must not be async. */
  tx<T>(fn: () => T): T;
  close(): void;
};

export function openDatabase(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  const db = drizzle(sqlite, { schema }) as unknown as Db;

  let depth = 0;
  db.tx = <T>(fn: () => T): T => {
    const savepoint = `sp${depth}`;
    sqlite.exec(depth === 0 ? "BEGIN IMMEDIATE" : `SAVEPOINT ${savepoint}`);
    depth++;
    try {
      const result = fn();
      if (result instanceof Promise) throw new Error("db.tx callback must be synchronous");
      sqlite.exec(depth === 1 ? "COMMIT" : `RELEASE ${savepoint}`);
      return result;
    } catch (e) {
      sqlite.exec(depth === 1 ? "ROLLBACK" : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
      throw e;
    } finally {
      depth--;
    }
  };
  db.close = () => {
    try {
      sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      sqlite.close();
    }
  };
  return db;
}
