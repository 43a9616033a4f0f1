/**
 * The one SQLite connection (one writer; WAL lets readers of other processes, e.g. `backup`, run beside it),
 * and the Db contract every store and service sees (Db, StoreDb, Statement).
 *
 * NB! `synchronous=FULL`: NORMAL can lose acknowledged commits on power loss, and a 202 is a promise.
 *
 * Beside it: transactions and units of work (transactions.ts), the group commit (group-commit.ts) and the
 * WAL's fdatasync off the event loop (wal-sync.ts).
 */
import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import { withGroupCommit } from "./group-commit";
import { withTransactions, type TxHooks } from "./transactions";
import { walSync } from "./wal-sync";

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
  Pick<
    Db,
    | "engine"
    | "url"
    | "sql"
    | "dataVersion"
    | "unit"
    | "join"
    | "atEnd"
    | "afterCommit"
    | "beforeCommit"
    | "track"
    | "rollbacks"
    | "durable"
    | "backgroundSlice"
  >;
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
   *
   * `shared` (PostgreSQL; SQLite groups every unit anyway): fn may share one transaction with the other shared
   * units that start while one is running — their statements pipelined on one connection, one BEGIN and one
   * COMMIT for all, in flight together (the engine's shared group). For request units that take no lock to
   * keep other units out (no `FOR UPDATE`, no read-then-write that relies on being alone) and hold the rows
   * others wait for through `atEnd`. If any of the group fails, each runs again as a unit of its own.
   */
  unit<T>(fn: () => T | Promise<T>, options?: { background?: boolean; onCommit?: () => void; shared?: boolean }): Promise<T>;
  /**
   * A write that locks a row other units wait for (a conversation touched, a company's balance debited), or one
   * nothing in the unit reads back (a message inserted: it then goes out in their round trip): in a shared group
   * (see unit) it runs when the group's units have run, with the group's other such writes in the order of
   * `order` (the lock's rank, then the row's key: "0 message <id>", "1 conversation <id>", "2 balance <company>"),
   * so groups lock those rows in one order (no deadlock between instances) and hold them from there to COMMIT
   * only; the promise then resolves at once, and a throw of fn fails the group (each unit runs again alone,
   * where it reaches its caller). Anywhere else fn runs now, and its promise is fn's.
   */
  atEnd(order: string, fn: () => Promise<unknown>): Promise<unknown>;
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
  const hooks: TxHooks = {
    begin: () => sqlite.query("BEGIN IMMEDIATE").run(),
    beginRead: () => sqlite.query("BEGIN").run(),
    beforeCommit: () => {},
    groupCommit: wal && {
      lazy: (on) => sqlite.query(on ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL").run(),
      sync: wal.sync,
      committed: wal.committed,
    },
  };
  const { state, inside } = withTransactions(db, hooks);
  // The group commit (db.batch, unit, join, holdGroups) shares the transactions' state on this connection.
  withGroupCommit(db, hooks.groupCommit ?? null, state, inside);
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
