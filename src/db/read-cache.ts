/**
 * Small in-memory caches for rows read on every request (API keys, companies, balances) that stay
 * correct when another process writes the database — the `switchboard keys revoke` or `balance credit`
 * CLI. SQLite's `PRAGMA data_version` changes whenever another connection commits; it is read at most
 * every `checkEveryMs`, so an external change is seen within that time (0.1 s by default; 0 checks on every
 * read). `perTurn` checks once per event-loop turn instead — the API key cache, where a revocation must hold
 * for the next request: the requests of one turn arrived before its first check began (~4.4 µs a check
 * outside a transaction, ~6 % of a POST /messages; bench/RESULTS.md "Tenth round"). Writes of this process
 * must call `invalidate` themselves (data_version ignores our own connection's commits).
 *
 * On PostgreSQL the other writers are instances serving traffic, not an occasional CLI: the version
 * (`db.dataVersion`: notifications received, no round trip) is checked on every lookup. Values other instances
 * change without a notification (a balance, debited by every paid send) are not cached there at all
 * (`notified: false`): each lookup loads.
 *
 * A value loaded inside a transaction may be one that transaction wrote: if anything on the connection has
 * rolled back since (`db.rollbacks()`, rare: a refused item of a group commit), the cache is emptied.
 */
import type { Db } from "./client";

export function createReadCache<K, V>(
  db: Db,
  {
    checkEveryMs = 100,
    maxEntries = 10_000,
    perTurn = false,
    notified = true,
  }: { checkEveryMs?: number; maxEntries?: number; perTurn?: boolean; notified?: boolean } = {},
) {
  if (db.engine === "postgres" && !notified)
    return {
      lookup: (_key: K, load: () => Promise<V>): V | Promise<V> => load(),
      invalidate: (_key?: K): void => {},
    };
  if (db.engine === "postgres") {
    checkEveryMs = 0;
    perTurn = false; // the version there is a counter in memory: nothing to save
  }
  const entries = new Map<K, V>();
  let seen = db.dataVersion();
  let rollbacks = db.rollbacks();
  let checkedAt = performance.now();
  let checkedThisTurn = false;
  // An asynchronous load (lookup) keeps its value only if the cache was not emptied, nor its key invalidated,
  // while it ran: the value may predate that change.
  let emptied = 0;
  let loading = 0;
  const invalidatedWhileLoading = new Set<K>();
  const turnEnded = () => {
    checkedThisTurn = false;
  };

  function fresh(): void {
    if (rollbacks !== db.rollbacks()) {
      rollbacks = db.rollbacks();
      entries.clear();
      emptied++;
    }
    if (perTurn) {
      // (An immediate runs after the I/O callbacks of the turn that queued it, before the next poll's.)
      if (checkedThisTurn) return;
      checkedThisTurn = true;
      setImmediate(turnEnded);
    } else {
      const t = performance.now();
      if (checkEveryMs > 0 && t - checkedAt < checkEveryMs) return;
      checkedAt = t;
    }
    const v = db.dataVersion();
    if (v !== seen) {
      seen = v;
      entries.clear();
      emptied++;
    }
  }

  return {
    /**
     * The cached value at once, without a promise, when it is there (a hot path stays synchronous); else the
     * load's promise (a store's read). Its value is kept unless the cache was emptied or invalidated while it ran
     * (it may predate that change).
     */
    lookup(key: K, load: () => Promise<V>): V | Promise<V> {
      fresh();
      if (entries.has(key)) return entries.get(key)!;
      const before = emptied;
      loading++;
      const settled = () => {
        if (--loading === 0) invalidatedWhileLoading.clear();
      };
      return load().then(
        (value) => {
          if (emptied === before && !invalidatedWhileLoading.has(key)) {
            if (entries.size >= maxEntries) entries.clear();
            entries.set(key, value);
          }
          settled();
          return value;
        },
        (error) => {
          settled();
          throw error;
        },
      );
    },
    invalidate(key?: K): void {
      if (key === undefined) {
        entries.clear();
        emptied++;
      } else {
        entries.delete(key);
        if (loading) invalidatedWhileLoading.add(key);
      }
    },
  };
}
