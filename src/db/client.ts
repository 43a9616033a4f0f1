/**
 * The one SQLite connection (one writer; WAL lets readers of other processes, e.g. `backup`, run beside it).
 *
 * NB! `synchronous=FULL`: NORMAL can lose acknowledged commits on power loss, and a 202 is a promise.
 *
 * Transactions: `db.tx(fn)` runs `fn` inside `BEGIN IMMEDIATE … COMMIT`. `fn` must be synchronous (bun:sqlite
 * is), so nothing else can interleave on the connection while it runs; a nested `tx` becomes a SAVEPOINT, so
 * services can compose (a route wraps a service's write together with its idempotency record).
 *
 * Group commit: `db.batch(fn)` queues `fn`; all batches queued during one event-loop turn run in ONE
 * transaction with one COMMIT — one fsync — for all of them. A throwing `fn` rejects only its own promise:
 * the group is rolled back and run again without it, each item in a savepoint (flush). The promise
 * resolves after that commit, so a caller that answers after `await db.batch(…)` never acknowledges an
 * uncommitted write. With synchronous=FULL a commit costs an fsync; this is what lets throughput exceed
 * fsyncs per second. Background items (the job queue's, a campaign's) come after a group's requests and
 * fill at most a slice of it (backgroundSlice: 1 ms while requests are writing); the rest wait for the next
 * group, after the event loop has read the requests that arrived meanwhile — one-to-one sends are not queued
 * behind a campaign.
 *
 * NB! A group's fsync runs off the event loop (SQLite): the group commits with synchronous=NORMAL (its
 * frames are written to the WAL, not synced), then `fdatasync` of the WAL file runs on the thread pool
 * (walSync below) and the group's promises resolve when it has finished — the same promise as FULL (nothing
 * acknowledged that a crash can lose), without the main thread waiting ~1 ms per group for the disk. A crash
 * before the sync loses that group, and, the WAL being replayed only up to its first torn frame, nothing
 * after it: every later group was acknowledged only after a later sync. Reads outside the group see its rows
 * before they are durable: answers built from reads wait for `durable()` (durable-reads.plugin.ts), and
 * nothing is sent on such a row, since jobs are claimed in a group and start when that group's sync (which
 * covers the enqueue) has finished. Plain `db.tx` commits stay synchronous=FULL.
 */
import { Database } from "bun:sqlite";
import { AsyncLocalStorage } from "node:async_hooks";
import { closeSync, fdatasync, fstatSync, mkdirSync, openSync, statSync } from "node:fs";
import { dirname } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";

/** No relational queries: the builder is typed by the table objects the stores import. */
export type Schema = Record<string, never>;
export type Engine = "sqlite" | "postgres";
/** A statement parameter of the portable SQL (`?` / `?N`). */
export type Param = string | number | bigint | boolean | null | Uint8Array;
type Row = Record<string, unknown>;
/**
 * A statement of the asynchronous store contract (DESIGN §15): SQL in the portable form both engines read
 * (`?` / `?N`; per-engine text from dialect.ts), rows shaped as SQLite shapes them (snake_case columns;
 * db/rows.ts maps them to drizzle rows). On SQLite it runs at once, underneath a resolved promise; on
 * PostgreSQL on the unit's connection, or the pool's outside a unit.
 */
export interface Statement {
  all(...params: Param[]): Promise<Row[]>;
  get(...params: Param[]): Promise<Row | null>;
  run(...params: Param[]): Promise<{ changes: number }>;
  values(...params: Param[]): Promise<unknown[][]>;
}
/**
 * What a store sees of the database (DESIGN §15, issue 35): drizzle's asynchronous builder (every query is
 * awaited; `run()` resolves `{ changes }`), `sql(text)` statements, and the unit's hooks — no driver, no synchronous transaction. The same
 * object as the Db at run time; `storeDb(db)` gives a module's store this view.
 */
export type StoreDb = BaseSQLiteDatabase<"async", { changes: number }, Schema> &
  Pick<Db, "engine" | "url" | "sql" | "dataVersion" | "unit" | "join" | "afterCommit" | "beforeCommit" | "track" | "rollbacks" | "durable" | "backgroundSlice">;
export const storeDb = (db: Db | StoreDb): StoreDb => db as unknown as StoreDb;

export type Db = BunSQLiteDatabase<Schema> & {
  /** A statement of the asynchronous contract (see Statement); cached by its text. */
  sql(text: string): Statement;
  /** bun:sqlite's Database. NB! SQLite only (src/db and SQLite-only tests): PostgreSQL has no synchronous driver. */
  $client: Database;
  engine: Engine;
  /** PostgreSQL: the URL it was opened with, for a worker thread's connection of its own (contacts' audience count). */
  url?: string;
  /** Changes when another process commits; this connection's own commits leave it (read-cache.ts). */
  dataVersion(): number;
  /** Runs fn in one IMMEDIATE transaction (savepoint when nested). fn must not be async. */
  tx<T>(fn: () => T): T;
  /**
   * Runs fn in the caller's transaction when there is one, with no savepoint of its own (each costs two
   * statements and copies of the pages it touches); in a new transaction when there is none.
   * NB! If fn throws, what it wrote so far stays in the caller's transaction: use it only where every caller
   * lets the error reach a `tx` (whose savepoint or rollback undoes it). A caller that catches the error
   * and goes on must wrap the call in `tx` itself.
   */
  within<T>(fn: () => T): T;
  /**
   * Runs fn so that a throw undoes fn's writes alone and reaches the caller, who may catch it and go on (a
   * job's writes that failed, a campaign's refused debit): `tx`'s savepoint, except in a group commit's
   * first, optimistic run of its items (see flush), where fn runs without one — if it throws there, the
   * whole group is rolled back once the item ends and run again, every `attempt` in a savepoint.
   */
  attempt<T>(fn: () => T): T;
  /**
   * Runs fn's reads in one snapshot (SQLite: a deferred transaction; PostgreSQL: fn as is). Each read outside
   * a transaction opens and closes a WAL snapshot of its own (~3 µs); a job that reads several rows before it
   * goes out (the dispatch: its message, the template's freshness) opens one. Inside a transaction: fn.
   */
  read<T>(fn: () => T): T;
  /**
   * Runs fn's reads in ONE snapshot on both engines (PostgreSQL: a REPEATABLE READ transaction, where `read`
   * runs fn as is and read committed takes a snapshot per statement); in the caller's transaction when inside
   * one. For reads that must agree with each other across many statements (a campaign estimate's pages).
   * Takes no write lock and touches no data version: fn must only read. fn may be async on the asynchronous
   * contract, and then must await nothing but its statements (SQLite: the snapshot holds the one connection).
   */
  snapshot<T>(fn: () => T): T;
  /**
   * Runs fn in the next group commit (inline when already inside a transaction); resolves after COMMIT (and,
   * SQLite, after the sync that makes it durable). `onCommit` is called once the group's COMMIT succeeded
   * with fn's writes in it, before that sync: for in-memory bookkeeping that need not wait for the disk
   * (a job's worker slot). Not called inside a caller's transaction, nor when fn or the COMMIT failed.
   * NB! fn may run twice: a group whose other item threw is rolled back and run again (flush). Its effects
   * must be writes, or in-memory changes undone by `afterCommit`'s rolledBack (or harmless when repeated).
   *
   * `background`: work nobody is waiting on an answer for (the job queue's claims and outcomes, a campaign's
   * fan-out). A group runs every waiting foreground item (requests) first, then background items until the
   * group has run `backgroundSlice()` — at least one — and leaves the rest for the next group, after the
   * event loop has taken new requests. Keep a background item within that slice: it is the unit.
   */
  batch<T>(fn: () => T | Promise<T>, onCommit?: () => void, background?: boolean): Promise<T>;
  /**
   * The unit of work of the asynchronous store contract (DESIGN §15): fn's writes in one transaction —
   * outside a unit, the next group commit (db.batch); inside one, a savepoint of the caller's. fn may await
   * its stores: on SQLite they answer at once, so a group still runs whole within one event-loop turn.
   * Only fn's own chain of awaits is inside the unit (AsyncLocalStorage): a synchronous `tx`, `within` or
   * `afterCommit` from any other chain while a unit awaits throws rather than join a transaction not its own.
   * NB! As with batch, fn may run twice (a group whose other item threw runs again).
   */
  unit<T>(fn: () => T | Promise<T>, options?: { background?: boolean; onCommit?: () => void }): Promise<T>;
  /** `within`'s asynchronous twin: fn in the caller's unit when there is one (no savepoint), else in a unit of its own. */
  join<T>(fn: () => T | Promise<T>): Promise<T>;
  /**
   * How long a piece of background work may hold the event loop now (ms): a group's background slice, and
   * the unit the job queue and the campaign engine size their steps by — short while requests are writing.
   */
  backgroundSlice(): number;
  /**
   * How many transactions or savepoints have rolled back (or failed) on this connection: a value kept in
   * memory from inside a transaction (the ledger's running balance) is stale once this has moved.
   */
  rollbacks(): number;
  /**
   * Resolves once every commit made so far is on disk. SQLite: a group commit is visible to this
   * connection's reads before its fsync has finished (its own requests wait for that fsync, readers do
   * not): an answer built from reads (GET, an idempotent replay) awaits this first. PostgreSQL: at once.
   */
  durable(): Promise<void>;
  /**
   * Inside a transaction: `committed` runs once what it wrote is durable — right after a plain transaction's
   * COMMIT, after the sync of a group commit — and `rolledBack` instead when the savepoint or transaction it
   * was registered in is undone, or the COMMIT or the group's sync fails. Exactly one of them runs. Both must
   * not throw (in-memory bookkeeping, such as starting a job this transaction inserted).
   */
  afterCommit(committed: () => void, rolledBack: () => void): void;
  /**
   * Inside a transaction: fn runs just before it commits, inside it (after the group's last item, in a group
   * commit); registered again in the same transaction, it still runs once. For writes kept back and merged
   * until then (write-behind.ts). A throw fails the transaction — in a group commit, every item of it.
   */
  beforeCommit(fn: () => void | Promise<void>): void;
  /** Whether the caller runs inside a transaction of its own chain (a unit, or a synchronous tx). */
  inUnit(): boolean;
  /**
   * Runs fn outside whatever unit the caller is in: for background work started from inside a unit (a timer, an
   * immediate), which is not part of it. NB! On PostgreSQL the unit is the caller's chain of awaits
   * (AsyncLocalStorage), which timers inherit: a loop woken from inside a unit would run its own units as
   * savepoints of that one, beside the rest of it.
   */
  outside<T>(fn: () => T): T;
  /** Units run side by side, each a transaction of its own (PostgreSQL on Bun.SQL); absent: one group commit at a time. */
  concurrentUnits?: boolean;
  /**
   * Inside a transaction: the transaction (or savepoint) in which it was called does not commit before
   * `work` has settled, and fails if it rejects — asynchronous work started on its behalf (an event
   * subscriber's writes, events.ts). Only in a unit (db.unit): a synchronous transaction cannot wait, and
   * refuses it.
   */
  track(work: Promise<unknown>): void;
  /** While on, group commits wait (the WAL checkpointer's short hold, checkpointer.ts); plain tx do not. */
  holdGroups(on: boolean): void;
  close(): void;
};

/**
 * NB! bun:sqlite's own `query()` cache keeps only the 20 most recently used statements
 * (Database.MAX_QUERY_CACHE_SIZE), and moves the hit to the end of its Map on every call: the send path
 * runs more than 20 distinct statements, so each request re-prepared most of them (~10 µs each; `prepare`
 * was 3 % of the CPU under load), and the reordering alone cost 4 %. Our statement texts are a fixed set of
 * a few hundred: `query()` on our connection is a plain lookup (emptied if it ever holds 5,000 texts).
 */
function cacheStatements(sqlite: Database): void {
  const prepare = sqlite.query.bind(sqlite);
  const statements = new Map<string, ReturnType<Database["query"]>>();
  sqlite.query = ((sql: string) => {
    let s = statements.get(sql);
    if (s === undefined) {
      if (statements.size >= 5000) statements.clear();
      statements.set(sql, (s = prepare(sql)));
    }
    return s;
  }) as Database["query"];
}

/**
 * `Db.sql` over a synchronous connection (bun:sqlite, or the PostgreSQL facade): each statement runs at once
 * and its result is handed back resolved — a throw becomes a rejection, as it would from a driver that waits.
 */
function asyncStatements(conn: Database): (text: string) => Statement {
  const wrappers = new Map<string, Statement>();
  return (text) => {
    let w = wrappers.get(text);
    if (w === undefined) {
      if (wrappers.size >= 5000) wrappers.clear();
      wrappers.set(
        text,
        (w = {
          all: async (...p) => conn.query(text).all(...(p as never[])) as Row[],
          get: async (...p) => conn.query(text).get(...(p as never[])) as Row | null,
          run: async (...p) => conn.query(text).run(...(p as never[])),
          values: async (...p) => conn.query(text).values(...(p as never[])),
        }),
      );
    }
    return w;
  };
}

export function openDatabase(path: string): Db {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const sqlite = new Database(path, { create: true, strict: true });
  cacheStatements(sqlite);
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  // 32 MB page cache (default is 2 MB): with a million contacts the hot index pages no longer fit in 2 MB.
  // Measured with bench/contacts.bench.ts at 1M imported rows: 16, 32 and 64 MB import equally fast when
  // identity values arrive in order; with random values 64 MB is ~15 % faster than 16 MB but costs 48 MB RSS.
  sqlite.exec("PRAGMA cache_size = -32768");
  const db = drizzle(sqlite) as unknown as Db;
  db.engine = "sqlite";
  db.sql = asyncStatements(sqlite);
  const version = sqlite.prepare("PRAGMA data_version");
  // (~2 µs a read: the pragma opens a read transaction of its own. withTransactions reads it once per transaction.)
  db.dataVersion = () => (version.get() as { data_version: number }).data_version;
  const wal = path === ":memory:" ? null : walSync(`${path}-wal`);
  withTransactions(db, {
    begin: () => sqlite.query("BEGIN IMMEDIATE").run(),
    beginRead: () => sqlite.query("BEGIN").run(),
    beforeCommit: () => {},
    groupCommit: wal && {
      lazy: (on) => sqlite.query(on ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL").run(),
      sync: wal.sync,
      committed: wal.committed,
    },
  });
  db.durable = wal ? wal.durable : () => Promise.resolve();
  db.close = () => {
    try {
      sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } finally {
      sqlite.close();
      wal?.close();
    }
  };
  return db;
}

/**
 * fdatasync of the WAL file on the thread pool. `sync()` resolves once a sync that started after the call
 * has finished (so it covers every commit made before the call): one sync runs at a time, and the calls
 * that arrive meanwhile share the next one. `durable()` resolves once every commit made so far is synced
 * (at once when nothing was committed since the last sync started); commits call `committed()`.
 * The file is reopened if it is not the one at the path any more. A sync that fails rejects its callers
 * (their commits may not be durable; they are not acknowledged).
 */
export function walSync(
  walPath: string,
  datasync: typeof fdatasync = fdatasync,
): { sync(): Promise<void>; durable(): Promise<void>; committed(): void; close(): void } {
  type Round = { promise: Promise<void>; resolve(): void; reject(e: unknown): void };
  const round = (): Round => {
    const r = {} as Round;
    r.promise = new Promise<void>((resolve, reject) => Object.assign(r, { resolve, reject }));
    r.promise.catch(() => {}); // a round nobody awaits must not be an unhandled rejection
    return r;
  };
  let fd = -1;
  let closing = false;
  let dirty = false; // a commit since the last sync started
  let running: Round | null = null;
  let next: Round | null = null;
  const current = (): number => {
    const ino = statSync(walPath).ino;
    if (fd >= 0 && fstatSync(fd).ino === ino) return fd;
    if (fd >= 0) closeSync(fd);
    fd = openSync(walPath, "r");
    return fd;
  };
  const start = (r: Round) => {
    running = r;
    dirty = false;
    let syncing = -1;
    const done = (err: unknown) => {
      running = null;
      if (closing && syncing >= 0) {
        closing = false;
        closeSync(syncing);
      }
      // As SQLite names a failed fsync of its own (503 STORAGE_UNAVAILABLE, error.plugin.ts).
      if (err) r.reject(Object.assign(new Error(`fdatasync of the WAL failed: ${(err as Error).message}`), { code: "SQLITE_IOERR_FSYNC", cause: err }));
      else r.resolve();
      if (next) {
        const n = next;
        next = null;
        start(n);
      }
    };
    try {
      syncing = current();
      datasync(syncing, done);
    } catch (e) {
      done(e);
    }
  };
  const sync = (): Promise<void> => {
    if (!running) {
      const r = round();
      start(r);
      return r.promise;
    }
    return (next ??= round()).promise;
  };
  const settled = Promise.resolve();
  return {
    sync,
    durable: () => (dirty ? sync() : running ? running.promise : next ? next.promise : settled),
    committed: () => {
      dirty = true;
    },
    close() {
      // NB! Not under a sync still running on the thread pool (it would fail with EBADF): after it.
      if (running) closing = true;
      else if (fd >= 0) closeSync(fd);
      fd = -1;
    },
  };
}

/**
 * Whether a transaction that failed with `error` may succeed when run again as it is: on PostgreSQL it lost
 * a race with another instance — a unique key taken meanwhile (23505: the retry finds the row instead of
 * creating it), a serialization failure (40001) or a deadlock (40P01). A genuine duplicate fails again.
 */
export function retryable(db: Pick<Db, "engine">, error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return db.engine === "postgres" && (code === "23505" || code === "40001" || code === "40P01");
}

interface TxHooks {
  begin(): void;
  /** SQLite: BEGIN DEFERRED, for db.read (absent: db.read runs fn as is). */
  beginRead?(): void;
  beforeCommit(): void;
  /** SQLite: a group commits lazily (`lazy(true)` … `lazy(false)` around it) and is answered after `sync()`. */
  groupCommit?: GroupCommitHooks | null;
}
type GroupCommitHooks = { lazy(on: boolean): void; sync(): Promise<void>; committed(): void };
type CommitHook = { committed(): void; rolledBack(): void };

/** What the transaction nesting and the group commit share on one connection. */
interface TxState {
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
const unitContext = new AsyncLocalStorage<object>();

/** db.tx (nested: savepoints), read, within, attempt, afterCommit, rollbacks, dataVersion; then batch. */
function withTransactions(db: Db, hooks: TxHooks): void {
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
  withGroupCommit(db, hooks.groupCommit ?? null, state, inside);
}

type GroupItem = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void; onCommit?: () => void };
/**
 * How long a group runs background items for after its foreground ones (db.batch), while requests are
 * writing (one came in the last QUIET_MS); IDLE_SLICE_MS when none is. It bounds what a request waits behind:
 * its group, then that group's sync. Short slices cost commits (a campaign's fan-out alone ~12 % slower at
 * 1 ms), so they are short only when someone waits. Measured with a campaign fanning out at full speed beside
 * POST /messages (bench/campaigns.bench.ts): see bench/RESULTS.md.
 */
const BACKGROUND_SLICE_MS = 1;
const IDLE_SLICE_MS = 8;
const QUIET_MS = 100;
type ItemResult = { ok: true; value: unknown } | { ok: false; error: unknown };
const REPLAY = new Error("an attempt failed in an optimistic group run");
/** How often a transaction that lost a race (retryable) runs again before its error is answered. */
const RETRIES = 3;

/** db.batch and db.holdGroups: the writes of one event-loop turn in one transaction (see the file's head). */
function withGroupCommit(db: Db, group: GroupCommitHooks | null, state: TxState, inside: () => boolean): void {
  const sqlite = db.$client;
  const pending: GroupItem[] = []; // foreground: requests waiting for their answer
  const backlog: GroupItem[] = []; // background (db.batch)
  let scheduled = false;
  let held = false;
  let lastForeground = -Infinity; // when a foreground item last came
  db.backgroundSlice = () => (performance.now() - lastForeground < QUIET_MS ? BACKGROUND_SLICE_MS : IDLE_SLICE_MS);
  let isolateUntil = 0; // until then a group of more than one item runs each in a savepoint (runGroup)
  db.holdGroups = (on) => {
    held = on;
    if (!on && (pending.length || backlog.length)) schedule();
  };

  /**
   * Runs one group's items in one transaction and commits it; their results, or a throw when nothing of the
   * group committed (BEGIN or COMMIT failed: disk full, I/O error).
   *
   * Optimistic first: the items without a savepoint each. A savepoint copies every page an item touches before
   * it writes it (~7 µs of a POST /messages' ~65), to undo that item alone — which almost never happens. If
   * one throws, the group is rolled back and run again with a savepoint per item, without the one that threw
   * (it is refused with its error, decided as it ran after the items before it); for a second after that
   * every group of more than one item isolates them from the start. The same, with every item, when an
   * `attempt` inside an item threw: it must be undone alone.
   */
  async function runGroup(items: GroupItem[], firstBackground: number): Promise<(ItemResult | undefined)[]> {
    const results: (ItemResult | undefined)[] = new Array(items.length);
    let failed = -1; // the item refused in the optimistic run (not run again)
    let isolated = items.length > 1 && performance.now() < isolateUntil;
    // Background items after the first one wait for the next group once the slice is spent.
    const start = performance.now();
    const slice = db.backgroundSlice();
    const spent = (i: number) => i > firstBackground && performance.now() - start > slice;
    if (!isolated) {
      let at = -1; // the item running
      state.optimistic = true;
      state.attemptFailed = false;
      try {
        await db.tx(async () => {
          for (let i = 0; i < items.length; i++) {
            if (spent(i)) break;
            at = i;
            results[i] = { ok: true, value: await items[i]!.fn() };
            if (state.attemptFailed) throw REPLAY;
          }
          at = -1;
        });
      } catch (error) {
        // After a failed attempt the item's own error proves nothing: on PostgreSQL the failed statement
        // aborted the transaction, and every statement the item ran after catching it failed too.
        if (error === REPLAY || state.attemptFailed) isolated = true;
        else if (at < 0)
          throw error; // BEGIN or COMMIT failed: nothing of this group is durable
        else if (retryable(db, error))
          isolated = true; // it lost a race with another instance: every item again, each in a savepoint
        else {
          results[at] = { ok: false, error };
          failed = at;
          isolated = items.length > 1;
        }
      } finally {
        state.optimistic = false;
      }
      if (isolated) isolateUntil = performance.now() + 1000;
    }
    if (isolated)
      await db.tx(async () => {
        for (let i = 0; i < items.length; i++) {
          if (i === failed) continue;
          results[i] = undefined; // the optimistic run's outcome was undone with it
          if (i > failed && spent(i)) continue;
          try {
            results[i] = { ok: true, value: await retrying(() => db.tx(items[i]!.fn)) };
          } catch (error) {
            // SQLite rolled the whole group back with this item (see tx): the items before it are lost
            // too, so every item of the group fails rather than being answered as stored.
            if (!sqlite.inTransaction) throw error;
            results[i] = { ok: false, error };
          }
        }
      });
    return results;
  }

  /** fn again while it fails with a retryable error (PostgreSQL: a lost race), at most RETRIES times. */
  async function retrying<T>(fn: () => T | Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (attempt > RETRIES || !retryable(db, error)) throw error;
      }
    }
  }

  const MAX_GROUP = 2000; // bounds the latency one commit adds to the requests in it
  const schedule = () => {
    if (!scheduled && !held) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  let flushing = false; // a group is running (its items may await: the next one waits for it)
  const flush = async () => {
    scheduled = false;
    if (flushing) return;
    flushing = true;
    try {
      await flushGroups();
    } finally {
      flushing = false;
      if (pending.length && !held) schedule();
    }
  };
  const flushGroups = async () => {
    while ((pending.length || backlog.length) && !held) {
      const foreground = pending.splice(0, MAX_GROUP);
      const items = foreground.concat(backlog.splice(0, MAX_GROUP - foreground.length));
      let ran: GroupItem[];
      let results: ItemResult[];
      const committedHooks: CommitHook[] = [];
      state.groupHooks = committedHooks;
      const token = {};
      state.asyncOpen = token;
      try {
        group?.lazy(true);
        const all = await unitContext.run(token, () => runGroup(items, foreground.length));
        // Background items the slice had no room for wait, first in line, for the next group.
        ran = items.filter((_, i) => all[i]);
        if (ran.length < items.length) backlog.unshift(...items.filter((_, i) => !all[i]));
        results = all.filter((r) => r !== undefined);
      } catch (error) {
        // The COMMIT itself failed (disk full, I/O error): nothing of this group is durable.
        for (const item of items) item.reject(error);
        continue;
      } finally {
        state.asyncOpen = null;
        state.groupHooks = null;
        try {
          group?.lazy(false);
        } catch {
          // Only when the connection has been closed under the group: then there is nothing to restore.
        }
      }
      group?.committed();
      // (Bookkeeping callbacks of the queue: they must not throw.)
      ran.forEach((item, i) => {
        if (item.onCommit && results[i]!.ok) item.onCommit();
      });
      const answer = () => {
        for (const h of committedHooks) h.committed();
        ran.forEach((item, i) => {
          const r = results[i]!;
          if (r.ok) item.resolve(r.value);
          else item.reject(r.error);
        });
      };
      if (!group) answer();
      else {
        group.sync().then(answer, (error) => {
          for (const h of committedHooks) h.rolledBack();
          for (const item of ran) item.reject(error);
        });
      }
      // Background work left (or queued by this group's onCommit): the next group, after the event loop has
      // taken what arrived meanwhile.
      if (backlog.length) return schedule();
    }
  };
  db.batch = <T>(fn: () => T | Promise<T>, onCommit?: () => void, background = false): Promise<T> => {
    if (inside()) {
      try {
        // A unit nested in a group's optimistic run is an `attempt`: no savepoint (two statements and a copy of
        // every page it touches, ~7 µs of a send); if it throws, the group runs again with one (runGroup).
        if (state.optimistic) return Promise.resolve(db.attempt(fn));
        return Promise.resolve(db.tx(fn));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise<T>((resolve, reject) => {
      if (!background) lastForeground = performance.now();
      (background ? backlog : pending).push({ fn, resolve: resolve as (v: unknown) => void, reject, onCommit });
      schedule();
    });
  };
  db.unit = (fn, options) => db.batch(fn, options?.onCommit, options?.background);
  db.join = <T>(fn: () => T | Promise<T>): Promise<T> => {
    if (!inside()) return db.batch(fn);
    try {
      return Promise.resolve(fn());
    } catch (e) {
      return Promise.reject(e);
    }
  };
}
