/**
 * PostgreSQL on Bun's built-in client (DESIGN §15, issue 35 item 2): the Db of the asynchronous store contract
 * over a pool (bunsql.ts) — no statement blocks the event loop, so a slow, locked or unreachable database delays
 * only the requests that need it, and each answers within the pool's deadlines (503 STORAGE_UNAVAILABLE).
 *
 * - A unit of work (`db.unit`) is one transaction on a connection of its own (`pool.unit`); a unit inside a unit
 *   is a savepoint of it. Which unit a statement belongs to is the caller's chain of awaits (AsyncLocalStorage):
 *   `db.sql(text)` and drizzle's builder run on the unit's connection inside it, on the pool outside.
 * - There is no group commit: units run side by side, up to `units` at once (the rest wait their turn), each
 *   invariant held by its own rows (client.ts, openPostgres). A unit that lost a race (23505, 40001, 40P01) runs
 *   again, whole, at most RETRIES times; the hooks of the run that failed are rolled back.
 * - drizzle's SQLite builder runs through its proxy driver: the SQL it writes is the portable subset (compat.ts
 *   rewrites its parameters and upsert targets), and rows come back shaped as on SQLite (bunsql.ts decoders).
 * - `dataVersion` counts the notifications of `switchboard_data_version` (triggers on keys, companies, templates
 *   and credits, migrations-pg 0012) heard on a LISTEN connection of its own; while it does not listen (start-up,
 *   the database away), every call is a change, so no cache trusts what it holds.
 * - The synchronous surface (`tx`, `within`, `attempt`) does not exist here: it throws.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { drizzle } from "drizzle-orm/sqlite-proxy";
import type { Db, Param, Statement } from "../client";
import { retryable } from "../transactions";
import { openPgPool, type PgParam, type PgPool, type PgPoolOptions, type PgRunner, type PgTx } from "./bunsql";

/** How often a unit that lost a race runs again (as the SQLite engine's group items, group-commit.ts). */
const RETRIES = 3;
/** How many shared groups run at once (db.unit's `shared`), and how many units one takes at most. */
const SHARED_LANES = 2;
const MAX_SHARED = 200;
const DATA_VERSION_CHANNEL = "switchboard_data_version";

export interface PgEngineOptions extends PgPoolOptions {
  /** How many units run at once; the others wait their turn (default: the pool's size less two, at least one). */
  units?: number;
}

type Hook = { committed(): void; rolledBack(): void };
/** One open level of a unit: the transaction (0) or a savepoint in it. */
type Level = { hooks: Hook[]; tracked: Promise<unknown>[] };
/** A shared group's state (see runShared): its held-back locking writes, and whether a nested unit of it threw. */
type Shared = { late: { order: string; fn: () => Promise<unknown> }[]; nestedFailed: boolean; ending: boolean };
type Unit = { tx: PgTx; levels: Level[]; preCommit: Set<() => void | Promise<void>>; ended: boolean; shared?: Shared };
/** What a chain of awaits is inside: its unit and the level it runs at. */
type Scope = { unit: Unit; depth: number };

/** A small counting semaphore: at most `size` holders, the rest in arrival order. */
function gate(size: number) {
  let free = size;
  const waiting: (() => void)[] = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

/** Waits for a level's tracked work, including work tracked meanwhile. */
async function drain(level: Level): Promise<void> {
  for (let i = 0; i < level.tracked.length; i++) await level.tracked[i];
}

/**
 * fn, then the level's tracked work. NB! When fn fails, the tracked work is still waited for (however it ends)
 * before the failure reaches the rollback: what it wrote afterwards would run outside the transaction.
 */
async function runLevel<T>(level: Level, fn: () => T | Promise<T>): Promise<T> {
  let value: T;
  try {
    value = await fn();
  } catch (e) {
    for (let i = 0; i < level.tracked.length; i++) await level.tracked[i]!.catch(() => {});
    throw e;
  }
  await drain(level);
  return value;
}

export function openPostgres(url: string, options: PgEngineOptions = {}): Db & { pool: PgPool; end(): Promise<void> } {
  const pool = openPgPool(url, options);
  const scopes = new AsyncLocalStorage<Scope>();
  const inUnit = (): Scope | undefined => {
    const s = scopes.getStore();
    return s && !s.unit.ended ? s : undefined;
  };
  const runner = (): PgRunner => inUnit()?.unit.tx ?? pool;

  const proxy = drizzle(async (text, params, method) => {
    const r = runner();
    if (method === "run") return { rows: [], changes: (await r.run(text, params as PgParam[])).changes } as { rows: unknown[] };
    const rows = await r.values(text, params as PgParam[]);
    return { rows: method === "get" ? (rows[0] as unknown[]) : rows };
  });
  const db = proxy as unknown as Db & { pool: PgPool; end(): Promise<void> };
  db.engine = "postgres";
  db.url = url;
  db.pool = pool;
  db.concurrentUnits = true;

  const statements = new Map<string, Statement>();
  db.sql = (text) => {
    let s = statements.get(text);
    if (s === undefined) {
      if (statements.size >= 5000) statements.clear();
      statements.set(
        text,
        (s = {
          all: (...p: Param[]) => runner().all(text, p),
          get: (...p: Param[]) => runner().get(text, p),
          run: (...p: Param[]) => runner().run(text, p),
          values: (...p: Param[]) => runner().values(text, p),
        }),
      );
    }
    return s;
  };

  let rollbacks = 0;
  db.rollbacks = () => rollbacks;
  const units = gate(Math.max(1, options.units ?? (options.poolSize ?? 10) - 2));

  const mustBeInside = (what: string): Scope => {
    const s = inUnit();
    if (!s) throw new Error(`db.${what} outside a unit of work`);
    return s;
  };
  db.afterCommit = (committed, rolledBack) => {
    const s = mustBeInside("afterCommit");
    s.unit.levels[s.depth]!.hooks.push({ committed, rolledBack });
  };
  db.track = (work) => {
    const s = mustBeInside("track");
    work.catch(() => {}); // its level reports the rejection
    s.unit.levels[s.depth]!.tracked.push(work);
  };
  db.inUnit = () => inUnit() !== undefined;
  db.outside = (fn) => scopes.exit(fn);
  db.beforeCommit = (fn) => {
    mustBeInside("beforeCommit").unit.preCommit.add(fn);
  };

  /** A savepoint of the caller's unit. */
  async function nested<T>(s: Scope, fn: () => T | Promise<T>): Promise<T> {
    const { unit } = s;
    if (unit.shared) {
      // In a shared group the units' statements interleave on one connection, where a savepoint would undo
      // the others' too: fn runs without one, and if it throws the group runs again, each unit alone (where
      // this is a savepoint). As SQLite's optimistic group runs an `attempt`.
      try {
        return await fn();
      } catch (e) {
        unit.shared.nestedFailed = true;
        throw e;
      }
    }
    if (s.depth !== unit.levels.length - 1)
      throw new Error(`units of work nested in one unit ran at once (level ${s.depth} of ${unit.levels.length}): await each before starting the next`);
    const level: Level = { hooks: [], tracked: [] };
    unit.levels.push(level);
    try {
      const value = await unit.tx.savepoint(() => scopes.run({ unit, depth: s.depth + 1 }, () => runLevel(level, fn)));
      unit.levels.pop();
      unit.levels[s.depth]!.hooks.push(...level.hooks);
      return value;
    } catch (e) {
      unit.levels.pop();
      rollbacks++;
      for (const h of level.hooks) h.rolledBack();
      throw e;
    }
  }

  /**
   * body in a transaction of its own on a pooled connection, as its chain's unit: the unit's hooks are committed
   * once it has committed, rolled back when it did not (also each run pool.unit repeats after 40001/40P01).
   */
  async function transaction<T>(body: (unit: Unit) => Promise<T>, shared = false): Promise<T> {
    let current: Unit | null = null;
    const discard = () => {
      const u = current;
      current = null;
      if (!u) return;
      u.ended = true;
      for (const level of u.levels) for (const h of level.hooks) h.rolledBack();
    };
    try {
      const value = await units(() =>
        pool.unit(async (tx) => {
          discard();
          const unit: Unit = { tx, levels: [{ hooks: [], tracked: [] }], preCommit: new Set(), ended: false };
          if (shared) unit.shared = { late: [], nestedFailed: false, ending: false };
          current = unit;
          return scopes.run({ unit, depth: 0 }, () => body(unit));
        }),
      );
      const unit = current as Unit | null;
      if (unit) {
        unit.ended = true;
        for (const h of unit.levels[0]!.hooks) h.committed();
      }
      return value;
    } catch (e) {
      discard();
      rollbacks++;
      throw e;
    }
  }

  /** What runs just before COMMIT: the unit's beforeCommit functions (what they run may register more). */
  async function beforeCommitOf(unit: Unit): Promise<void> {
    for (const f of unit.preCommit) {
      unit.preCommit.delete(f);
      await f();
    }
  }

  /** A unit of its own: one transaction, run again (whole) when it lost a race. */
  async function top<T>(fn: () => T | Promise<T>, onCommit?: () => void): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        const value = await transaction(async (unit) => {
          const v = await runLevel(unit.levels[0]!, fn);
          await beforeCommitOf(unit);
          return v;
        });
        onCommit?.();
        return value;
      } catch (e) {
        if (attempt > RETRIES || !retryable(db, e)) throw e;
      }
    }
  }

  // ------------------------------------------------------------ shared groups (db.unit's `shared`)
  type Item = { fn: () => unknown; onCommit?: () => void; resolve(v: unknown): void; reject(e: unknown): void };
  const waiting: Item[] = [];
  let lanesBusy = 0;
  /**
   * How often shared groups failed lately (each group moves it a fifth of the way to 1 or 0): above a half, shared
   * units run alone (a group that fails costs its run and then each unit's), and each such run lets it fall back.
   */
  let failing = 0;
  const groupRan = (failed: boolean) => (failing = failing * 0.8 + (failed ? 0.2 : 0));
  /** Thrown out of a shared group's transaction when one of its units (or a held-back write) failed. */
  class GroupFailed extends Error {}

  /**
   * Shared units wait here while SHARED_LANES groups are running; each lane that frees takes every waiting one
   * (up to MAX_SHARED) as its next group. So under load a group is the sends that came while the last one ran
   * (a group commit as SQLite's, without holding the event loop), and a lone send starts at once.
   */
  const startShared = () => {
    while (lanesBusy < SHARED_LANES && waiting.length) {
      const items = waiting.splice(0, MAX_SHARED);
      lanesBusy++;
      const grouped = items.length > 1 && failing <= 0.5;
      if (items.length > 1 && !grouped) failing *= 0.9;
      const run = grouped ? runShared(items) : alone(items);
      void run.finally(() => {
        lanesBusy--;
        startShared();
      });
    }
  };
  /** Each item as a unit of its own, side by side. */
  const alone = (items: Item[]) => Promise.all(items.map((it) => top(it.fn, it.onCommit).then(it.resolve, it.reject)));

  /**
   * A shared group: its units' bodies side by side in ONE transaction (their statements pipelined on its
   * connection), then the locking writes they held back (atEnd) in their order, then COMMIT. Any failure in
   * the bodies or those writes rolls the group back, and each unit runs again alone (its own answer, its own
   * refusal); a failure of BEGIN or COMMIT itself (the database away; a COMMIT whose outcome is unknown) is
   * every unit's answer, as it would have been each one's alone.
   */
  async function runShared(items: Item[]): Promise<void> {
    let values: unknown[];
    try {
      values = await transaction(async (unit) => {
        const shared = unit.shared!;
        const level = unit.levels[0]!;
        const settled = await Promise.allSettled(items.map((it) => runLevel(level, it.fn)));
        const failed = settled.find((r) => r.status === "rejected");
        if (failed || shared.nestedFailed) throw new GroupFailed("a unit of a shared group failed", { cause: failed?.reason });
        try {
          await beforeCommitOf(unit);
          shared.ending = true; // (atEnd from here on runs at once)
          const late = shared.late.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : 0));
          // Sent in their order without waiting for each other: one round trip, the locks taken in that order.
          // NB! Every one settles before a refusal ends the group: none may send a statement after its ROLLBACK.
          const written = await Promise.allSettled(late.map(async (w) => w.fn()));
          const refused = written.find((r) => r.status === "rejected");
          if (refused) throw refused.reason;
        } catch (e) {
          throw new GroupFailed("a held-back write of a shared group failed", { cause: e });
        }
        return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value);
      }, true);
    } catch (e) {
      if (!(e instanceof GroupFailed)) {
        for (const it of items) it.reject(e);
        return;
      }
      groupRan(true);
      await alone(items);
      return;
    }
    groupRan(false);
    items.forEach((it, i) => {
      it.onCommit?.();
      it.resolve(values[i]);
    });
  }

  db.atEnd = (order, fn) => {
    const shared = inUnit()?.unit.shared;
    if (!shared || shared.ending) return fn();
    shared.late.push({ order, fn });
    return Promise.resolve();
  };

  db.unit = (fn, options) => {
    const s = inUnit();
    if (s) return nested(s, fn);
    if (!options?.shared) return top(fn, options?.onCommit);
    return new Promise((resolve, reject) => {
      waiting.push({ fn, onCommit: options.onCommit, resolve: resolve as (v: unknown) => void, reject });
      startShared();
    });
  };
  db.batch = (fn, onCommit) => db.unit(fn, { onCommit });
  db.join = async (fn) => (inUnit() ? fn() : top(fn));
  db.read = (fn) => fn();
  db.snapshot = <T>(fn: () => T): T => {
    if (inUnit()) return fn();
    return pool.unit(async (tx) => {
      await tx.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");
      const unit: Unit = { tx, levels: [{ hooks: [], tracked: [] }], preCommit: new Set(), ended: false };
      try {
        return await scopes.run({ unit, depth: 0 }, async () => await fn());
      } finally {
        unit.ended = true;
      }
    }) as T;
  };
  const synchronous = (what: string) => () => {
    throw new Error(`db.${what}: a synchronous transaction on the asynchronous PostgreSQL engine — use db.unit / db.join`);
  };
  db.tx = synchronous("tx");
  db.within = synchronous("within");
  db.attempt = synchronous("attempt");

  // ------------------------------------------------------------ data version (caches of keys, companies, templates)
  let version = 0;
  let listening = false;
  let closed = false;
  let unlisten: (() => Promise<void>) | null = null;
  const listen = () => {
    if (closed) return;
    pool
      .listen(DATA_VERSION_CHANNEL, () => version++) // a notification, or a gap (reconnected): a change either way
      .then(
        (l) => {
          if (closed) return void l.unlisten();
          unlisten = l.unlisten;
          listening = true;
        },
        () => setTimeout(listen, 1000).unref(), // the database is away: try again
      );
  };
  listen();
  db.dataVersion = () => (listening ? version : ++version);

  db.durable = () => Promise.resolve(); // a commit is visible to others only once it is durable
  db.backgroundSlice = () => 8;
  db.holdGroups = () => {};
  db.end = async () => {
    closed = true;
    await unlisten?.();
    await pool.close();
  };
  db.close = () => void db.end().catch(() => {});
  return db;
}
