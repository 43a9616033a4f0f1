/**
 * The yardstick of issue 19: group commit as the issue defines it — the writes of one event-loop turn share
 * one `synchronous=FULL` COMMIT (the fsync on the thread that commits), each answered after it. Kept here,
 * apart from src/db/client.ts, so the baseline stays this definition whatever the appliance's own group
 * commit becomes (it syncs the WAL off the event loop since issue 19).
 */
import { Database } from "bun:sqlite";

export function fullGroupCommit(path: string): { sqlite: Database; batch<T>(fn: () => T): Promise<T> } {
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  let pending: { fn: () => unknown; resolve(v: unknown): void; reject(e: unknown): void }[] = [];
  const flush = () => {
    const items = pending;
    pending = [];
    const results: { ok: boolean; v: unknown }[] = [];
    sqlite.exec("BEGIN IMMEDIATE");
    for (const item of items) {
      sqlite.exec("SAVEPOINT item");
      try {
        results.push({ ok: true, v: item.fn() });
        sqlite.exec("RELEASE item");
      } catch (e) {
        sqlite.exec("ROLLBACK TO item; RELEASE item");
        results.push({ ok: false, v: e });
      }
    }
    sqlite.exec("COMMIT");
    items.forEach((item, i) => (results[i]!.ok ? item.resolve(results[i]!.v) : item.reject(results[i]!.v)));
  };
  return {
    sqlite,
    batch: <T>(fn: () => T) =>
      new Promise<T>((resolve, reject) => {
        if (!pending.length) setImmediate(flush);
        pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      }),
  };
}
