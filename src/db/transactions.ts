/**
 * Transactions on one connection: `db.tx(fn)` runs `fn` inside `BEGIN IMMEDIATE … COMMIT`. `fn` must be
 * synchronous (bun:sqlite is), so nothing else can interleave on the connection while it runs; a nested `tx`
 * becomes a SAVEPOINT, so services can compose (a route wraps a service's write together with its
 * idempotency record). Also read, snapshot, within, attempt, afterCommit, beforeCommit, track, rollbacks and
 * the data version; units of work and the group commit that runs them are group-commit.ts's.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Db } from "./client";

/**
 * Whether a transaction that failed with `error` may succeed when run again as it is: on PostgreSQL it lost
 * a race with another instance — a unique key taken meanwhile (23505: the retry finds the row instead of
 * creating it), a serialization failure (40001) or a deadlock (40P01). A genuine duplicate fails again.
 */
export function retryable(db: Pick<Db, "engine">, error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return db.engine === "postgres" && (code === "23505" || code === "40001" || code === "40P01");
}

export interface TxHooks {
  begin(): void;
  /** SQLite: BEGIN DEFERRED, for db.read (absent: db.read runs fn as is). */
  beginRead?(): void;
  beforeCommit(): void;
  /** SQLite: a group commits lazily (`lazy(true)` … `lazy(false)` around it) and is answered after `sync()`. */
  groupCommit?: GroupCommitHooks | null;
}
export type GroupCommitHooks = { lazy(on: boolean): void; sync(): Promise<void>; committed(): void };
export type CommitHook = { committed(): void; rolledBack(): void };

/** What the transaction nesting and the group commit share on one connection. */
export interface TxState {
  /** Open levels: 0 outside a transaction, 1 in it, more in savepoints. */
  depth: number;
  /** In a group commit: where its committed transaction's hooks wait for the group's sync. */
  groupHooks: CommitHook[] | null;
  /** A group's items run without savepoints (runGroup)… */
  optimistic: boolean;
  /** …and an `attempt` in them threw: the group must run again, isolated. */
  attemptFailed: boolean;
  /** While a group runs its items asynchronously: its token, the store of `unitContext` in their chains. */
  asyncOpen: object | null;
}

/** Which chain of awaits a running group's items are (TxState.asyncOpen). */
export const unitContext = new AsyncLocalStorage<object>();

/** How often a transaction that lost a race (retryable) runs again before its error is answered. */
export const RETRIES = 3;

/**
 * db.tx (nested: savepoints), read, within, attempt, afterCommit, rollbacks, dataVersion. Returns what the group
 * commit (group-commit.ts withGroupCommit) shares: the state and whether the caller is inside the open transaction.
 */
export function withTransactions(db: Db, hooks: TxHooks): { state: TxState; inside: () => boolean } {
  const sqlite = db.$client;
  const state: TxState = { depth: 0, groupHooks: null, optimistic: false, attemptFailed: false, asyncOpen: null };
  /**
   * Whether the caller is inside the open transaction: always when one is open and no group awaits (nothing
   * else can run in a synchronous transaction); while a group awaits its items, only their own chains.
   */
  const inside = () => state.depth > 0 && (state.asyncOpen === null || unitContext.getStore() === state.asyncOpen);
  const mustBeInside = (what: string) => {
    if (state.depth === 0) throw new Error(`db.${what} outside a transaction`);
    if (!inside()) throw new Error(`db.${what} from outside the unit of work that is running: use db.unit`);
  };
  let rollbacks = 0;
  db.rollbacks = () => rollbacks;
  // Inside our write transaction nobody else can commit: the data version is read once per transaction (the
  // send path asked four times per message).
  const readVersion = db.dataVersion;
  let txVersion: number | null = null;
  db.dataVersion = () => (state.depth > 0 ? (txVersion ??= readVersion()) : readVersion());
  // afterCommit: the hooks of each open level (transaction, then savepoints); a released savepoint's go to
  // its parent, a committed transaction's run (or, in a group commit, wait for its sync: groupHooks).
  const levels: CommitHook[][] = [];
  db.afterCommit = (committed, rolledBack) => {
    mustBeInside("afterCommit");
    levels[state.depth - 1]!.push({ committed, rolledBack });
  };
  // track: per open level, the work it waits for before it ends.
  const tracked: Promise<unknown>[][] = [];
  db.track = (work) => {
    mustBeInside("track");
    work.catch(() => {}); // its level reports the rejection
    tracked[state.depth - 1]!.push(work);
  };
  /** Waits for the level's tracked work, including work tracked meanwhile. */
  const drain = async (level: Promise<unknown>[]): Promise<void> => {
    for (let i = 0; i < level.length; i++) await level[i];
  };
  /** Waits until all of the level's tracked work has settled, however it ends. */
  const settleAll = async (level: Promise<unknown>[]): Promise<void> => {
    for (let i = 0; i < level.length; i++) await level[i]!.catch(() => {});
  };
  db.inUnit = inside;
  db.outside = (fn) => fn(); // (a unit here is the group commit's state, not the caller's chain)
  const preCommit = new Set<() => void | Promise<void>>();
  db.beforeCommit = (fn) => {
    mustBeInside("beforeCommit");
    preCommit.add(fn);
  };
  const runPreCommit = () => {
    // (What they run may register more.)
    for (const fn of preCommit) {
      preCommit.delete(fn);
      // NB! A synchronous transaction cannot wait: an async fn must have done its writes before its first
      // await (write-behind's flush with synchronous writes does). Goes with the last synchronous transactions.
      const pending = fn();
      if (pending instanceof Promise) pending.catch(() => {});
    }
  };
  /** In a unit (asynchronous): each before-commit function is awaited, so what it writes lands before COMMIT. */
  const runPreCommitAsync = async () => {
    for (const fn of preCommit) {
      preCommit.delete(fn);
      await fn();
    }
  };
  /** Undoes the innermost level after fn or its COMMIT failed, and rethrows. */
  /** Nested units of one unit must run one after another (awaited each): a level ends where it began. */
  const mustBeInnermost = (savepoint: string) => {
    if (savepoint !== `sp${state.depth - 1}`)
      throw new Error(`units of work nested in one unit ran at once (${savepoint} ended at depth ${state.depth}): await each before starting the next`);
  };
  const abort = (e: unknown, savepoint: string): never => {
    mustBeInnermost(savepoint);
    rollbacks++;
    try {
      // NB! After some errors (SQLITE_FULL, SQLITE_IOERR, SQLITE_BUSY, SQLITE_NOMEM) SQLite rolls the whole
      // transaction back by itself: then there is no savepoint to return to, and nothing of it survived.
      if (sqlite.inTransaction) sqlite.exec(state.depth === 1 ? "ROLLBACK" : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
      for (const h of levels.pop()!) h.rolledBack();
      tracked.pop();
      if (state.depth === 1) preCommit.clear();
    } finally {
      if (--state.depth === 0) txVersion = null;
    }
    throw e;
  };
  /** Commits the innermost level (releases its savepoint) once fn has ended. */
  const settle = <T>(result: T, savepoint: string): T => {
    mustBeInnermost(savepoint);
    try {
      if (state.depth === 1) {
        runPreCommit();
        hooks.beforeCommit();
      }
      sqlite.query(state.depth === 1 ? "COMMIT" : `RELEASE ${savepoint}`).run();
    } catch (e) {
      return abort(e, savepoint);
    }
    const ended = levels.pop()!;
    tracked.pop();
    if (state.depth > 1) levels[levels.length - 1]!.push(...ended);
    else if (state.groupHooks) state.groupHooks.push(...ended);
    if (--state.depth === 0) {
      txVersion = null;
      // A plain transaction is durable at its COMMIT (synchronous=FULL; PostgreSQL).
      if (!state.groupHooks) for (const h of ended) h.committed();
    }
    return result;
  };
  /**
   * fn in a transaction (a savepoint when nested). fn may return a promise only inside a group that runs
   * asynchronously (db.unit): the level stays open until it settles, and nothing outside the group's chains
   * can reach the connection meanwhile (inside()).
   */
  const transaction = <T>(fn: () => T, begin: () => void): T => {
    if (state.depth > 0 && !inside()) throw new Error("a synchronous transaction from outside the unit of work that is running: use db.unit");
    const savepoint = `sp${state.depth}`;
    // query(): statements cached by text, so a savepoint per group-commit item is not parsed each time.
    if (state.depth === 0) {
      try {
        begin();
      } catch (e) {
        // NB! PostgreSQL: BEGIN succeeded and the write lock timed out (lock_timeout), or the data version read
        // failed: the transaction is open and aborted, and every later statement of the connection would fail
        // until it ends. (SQLite's BEGIN IMMEDIATE that fails leaves no transaction.)
        if (sqlite.inTransaction) sqlite.exec("ROLLBACK");
        throw e;
      }
    } else sqlite.query(`SAVEPOINT ${savepoint}`).run();
    levels.push([]);
    tracked.push([]);
    state.depth++;
    let result: T;
    const level = tracked[tracked.length - 1]!;
    try {
      result = fn();
    } catch (e) {
      // NB! Work started on this level's behalf (an asynchronous subscriber) must not outlive it: what it wrote
      // after the rollback would run outside any transaction. It settles first.
      if (state.asyncOpen !== null && level.length) return settleAll(level).then(() => abort(e, savepoint)) as T;
      return abort(e, savepoint);
    }
    if (result instanceof Promise || level.length) {
      if (state.asyncOpen === null) {
        if (result instanceof Promise) result.catch(() => {});
        return abort(new Error("db.tx callback must be synchronous, and nothing it calls may await: use db.unit"), savepoint);
      }
      return (async () => {
        const value = await result;
        await drain(level);
        if (state.depth === 1) await runPreCommitAsync();
        return value;
      })().then(
        (value) => settle(value, savepoint),
        async (e) => {
          await settleAll(level); // (see above: nothing tracked runs on after the rollback)
          return abort(e, savepoint);
        },
      ) as T;
    }
    return settle(result, savepoint);
  };
  db.tx = <T>(fn: () => T): T => {
    for (let attempt = 1; ; attempt++) {
      try {
        return transaction(fn, hooks.begin);
      } catch (error) {
        // Only a whole transaction runs again; a savepoint's error is its caller's to handle.
        if (state.depth > 0 || attempt > RETRIES || !retryable(db, error)) throw error;
      }
    }
  };
  const beginRead = hooks.beginRead;
  db.read = beginRead ? <T>(fn: () => T): T => (state.depth > 0 ? fn() : transaction(fn, beginRead)) : <T>(fn: () => T): T => fn();
  const beginSnapshot = db.engine === "postgres" ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN DEFERRED";
  db.snapshot = <T>(fn: () => T): T => {
    if (sqlite.inTransaction) return fn();
    sqlite.exec(beginSnapshot);
    let result: T;
    try {
      result = fn();
    } catch (e) {
      sqlite.exec("COMMIT");
      throw e;
    }
    if (result instanceof Promise) return result.finally(() => sqlite.exec("COMMIT")) as T;
    sqlite.exec("COMMIT");
    return result;
  };
  db.within = <T>(fn: () => T): T => (inside() ? fn() : db.tx(fn));
  db.attempt = <T>(fn: () => T): T => {
    if (!state.optimistic || !inside()) return db.tx(fn);
    const failed = (e: unknown): never => {
      state.attemptFailed = true;
      throw e;
    };
    try {
      const result = fn();
      return (result instanceof Promise ? result.catch(failed) : result) as T;
    } catch (e) {
      return failed(e);
    }
  };
  return { state, inside };
}
