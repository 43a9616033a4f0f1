/**
 * Writes kept back until the transaction commits: values added under a key while it runs are written
 * together, one `write(key, values)` per key, just before its COMMIT (db.beforeCommit) — or earlier, by
 * `flush()`, which a reader of what they change calls first. A campaign's counters move two or three times
 * per recipient (sent, delivered, read: each an UPDATE of the campaign's row); kept back, a group commit
 * moves them once.
 *
 * Savepoints: what a savepoint that rolls back added is dropped; what a flush inside it wrote (SQLite undoes
 * that write) goes back to be written again, unless it was added there too.
 *
 * Units that run side by side (PostgreSQL on Bun.SQL: each a transaction of its own, no group commit to merge
 * into): a value is written when it is added, in the caller's unit.
 */
import type { Db } from "./client";

type Entry<V> = { key: string; value: V; state: "kept" | "written" | "dropped" };
const nothing = () => {};
type WriteBehindDb = Pick<Db, "concurrentUnits" | "inUnit" | "afterCommit" | "beforeCommit">;

export function writeBehind<V>(
  db: WriteBehindDb,
  write: (key: string, values: V[]) => void | Promise<void>,
): { add(key: string, value: V): Promise<void>; flush(): Promise<void> } {
  if (db.concurrentUnits) return { add: async (key, value) => await write(key, [value]), flush: async () => {} };
  let kept: Entry<V>[] = [];
  const flush = async () => {
    if (!kept.length) return;
    const batch = kept;
    kept = [];
    const byKey = new Map<string, V[]>();
    const written: Entry<V>[] = [];
    for (const e of batch) {
      if (e.state !== "kept") continue;
      e.state = "written";
      written.push(e);
      const values = byKey.get(e.key);
      if (values) values.push(e.value);
      else byKey.set(e.key, [e.value]);
    }
    // NB! Awaited only when `write` returns a promise: with synchronous writes, flush ends before it returns.
    for (const [key, values] of byKey) {
      const pending = write(key, values);
      if (pending) await pending;
    }
    // NB! Hooks of one level run in the order they were added: an entry's own (added with it) before this
    // one, so an entry dropped with this level is not kept again.
    if (written.length && db.inUnit())
      db.afterCommit(nothing, () => {
        for (const e of written)
          if (e.state === "written") {
            e.state = "kept";
            kept.push(e);
          }
      });
  };
  return {
    async add(key, value) {
      if (!db.inUnit()) return await write(key, [value]);
      const e: Entry<V> = { key, value, state: "kept" };
      kept.push(e);
      db.afterCommit(nothing, () => (e.state = "dropped"));
      db.beforeCommit(flush);
    },
    flush,
  };
}
