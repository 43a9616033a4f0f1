/**
 * The asynchronous PostgreSQL engine: a pool on Bun's built-in client (`Bun.SQL`, inside the binary), for the
 * stores that can wait (DESIGN §15). It takes SQL in our portable form (`?` / `?N`, compat.ts) and returns rows
 * in the shape the SQLite engine gives for the same schema, decoded as libpq.ts decodes them: integers, floats
 * and numerics → number, booleans → 1/0, bytea → Buffer, everything else → string (json as its text, a
 * timestamp as ISO 8601 — see decoderOf for where that text differs from libpq's).
 *
 * Every call settles in bounded time, and the pool heals by itself:
 * - the server's `statement_timeout`/`lock_timeout` (session settings below) end a slow or blocked statement
 *   with its SQLSTATE (57014, 55P03), which the error plugin answers with 503;
 * - a client-side deadline (statement timeout + margin) ends a call the server never answers (a black-holed
 *   network, where the server's timers cannot reach us): the call fails with STORAGE_UNAVAILABLE and the pool's
 *   connections are closed, so the next call opens new ones instead of queueing behind dead sockets;
 * - a connection refused, lost or terminated fails with STORAGE_UNAVAILABLE; a pooled connection the server
 *   ended while it was idle (57P01, one per dead connection) is retried on another one.
 */
import { SQL, type ReservedSQL } from "bun";
import { asTextBeforeJson, toPgConflictTarget, toPgParams } from "./portable";

export type PgParam = string | number | bigint | boolean | null | undefined | Uint8Array;
type Row = Record<string, unknown>;

export interface PgPoolOptions {
  poolSize?: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** How long after the statement timeout the client gives up on an answer (the server's own timeout wins on a live network). */
  marginMs?: number;
  /** How often a LISTEN connection proves it still hears (a notification it sends itself). */
  listenCheckMs?: number;
}

/** The statements of the pool or of a unit: SQL in the portable form, rows shaped as on SQLite. */
export interface PgRunner {
  all(sql: string, params?: readonly PgParam[]): Promise<Row[]>;
  get(sql: string, params?: readonly PgParam[]): Promise<Row | null>;
  run(sql: string, params?: readonly PgParam[]): Promise<{ changes: number }>;
  values(sql: string, params?: readonly PgParam[]): Promise<unknown[][]>;
}

export interface PgTx extends PgRunner {
  /** Runs fn in a savepoint: if fn throws, what it wrote is undone (ROLLBACK TO) and the error reaches the caller. */
  savepoint<T>(fn: (tx: PgTx) => Promise<T>): Promise<T>;
}

export interface PgPool extends PgRunner {
  /**
   * Runs fn in one transaction on one reserved connection: BEGIN … COMMIT, ROLLBACK when fn throws.
   * NB! fn may run more than once: the whole unit is run again after a serialization failure or a deadlock
   * (40001, 40P01) and when BEGIN met a connection the server had ended. fn must do nothing but its
   * statements (no sends, no events): whatever else it does would be done again.
   * NB! A connection lost during COMMIT fails with STORAGE_UNAVAILABLE, and the unit may or may not be committed.
   */
  unit<T>(fn: (tx: PgTx) => Promise<T>): Promise<T>;
  /**
   * LISTEN on a connection of its own, which reconnects by itself. `onNotify(null)` says the connection was
   * re-established or found deaf: notifications may have been missed, drop whatever they would have invalidated.
   */
  listen(channel: string, onNotify: (payload: string | null) => void): Promise<{ unlisten(): Promise<void> }>;
  /** Resolves when the database answers (readiness); rejects with STORAGE_UNAVAILABLE otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** Statements sent so far (BEGIN, COMMIT and savepoints included): what a unit of work costs in round trips. */
  readonly statements: number;
}

/** An error PostgreSQL answered a statement with; `code` is its SQLSTATE (23505, 40P01, 57014 …). */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly detail?: string,
  ) {
    super(message);
    this.name = "PgError";
  }
}

/**
 * The database cannot be reached (refused, black-holed, restarting, the connection lost). `code` is the
 * SQLSTATE that says which — 08001 no connection, 08006 lost, 08003 the pool closed, 57P0x ended — and the
 * HTTP layer answers every class-08/57P0x code 503 STORAGE_UNAVAILABLE with Retry-After (error.plugin.ts).
 */
export class StorageUnavailableError extends Error {
  constructor(
    why: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(`The database cannot be reached (${why})`);
    this.name = "StorageUnavailableError";
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

const RETRY_UNIT = new Set(["40001", "40P01"]);
const UNIT_ATTEMPTS = 5;

/** What the server sends to a session it ends (shutdown, crash, start-up): the statement did not run. */
const ENDED = new Set(["57P01", "57P02", "57P03"]);

/** Any error of Bun.SQL → PgError (the server's SQLSTATE) or StorageUnavailableError; others pass unchanged. */
export function toStorageError(e: unknown): unknown {
  if (e instanceof PgError || e instanceof StorageUnavailableError) return e;
  const err = e as { code?: string; errno?: string; message?: string; detail?: string };
  const message = String(err?.message ?? e);
  if (typeof err?.errno === "string" && err.errno.length === 5) {
    if (err.errno.startsWith("08") || ENDED.has(err.errno)) return new StorageUnavailableError(message, err.errno, { cause: e });
    return new PgError(message, err.errno, err.detail);
  }
  const code = err?.code ?? "";
  if (/^ERR_POSTGRES_(CONNECTION_|.*TIMEOUT|SOCKET|TLS|QUERY_CANCELLED)/.test(code)) {
    const lost = code === "ERR_POSTGRES_CONNECTION_CLOSED" || code === "ERR_POSTGRES_QUERY_CANCELLED";
    return new StorageUnavailableError(message, lost ? "08006" : "08001", { cause: e });
  }
  return e;
}

/** Statements that met a connection the server had already ended: nothing ran, another connection may serve. */
const stale = (e: unknown) => e instanceof StorageUnavailableError && ENDED.has(e.code);
/** Errors of a unit's BEGIN: nothing of the unit ran yet. */
const atBegin = new WeakSet<object>();

// ------------------------------------------------------------------ parameters and rows

/**
 * Bun types a parameter by its JS value (a number goes as int4/float8, a boolean as bool), where libpq sends
 * text and lets the server infer: `text_col = $1` with 5 fails (42883) and `bigint_col = $1` with true fails
 * (42804). So every value goes as text, as libpq sends it, and booleans as 1/0 as bun:sqlite binds them.
 */
function toParam(v: PgParam): string | Uint8Array | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string" || v instanceof Uint8Array) return v;
  if (typeof v === "boolean") return v ? "1" : "0";
  return String(v);
}

// Type OIDs (pg_type), as libpq.ts reads them.
const NUMBERS = new Set([20, 21, 23, 26, 700, 701, 1700]); // int8, int2, int4, oid, float4, float8, numeric
const BOOL = 16;
const BYTEA = 17;
type Decoder = (v: unknown) => unknown;
const asIs: Decoder = (v) => v;
const toNumber: Decoder = (v) => (v === null ? null : Number(v));
const toBit: Decoder = (v) => (v === null ? null : v ? 1 : 0);
const toBuffer: Decoder = (v) => (v === null || Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array));
/**
 * Types Bun decodes into objects go back to text. NB! Not byte for byte libpq's text: json is JSON.stringify's
 * (no spaces), a timestamp ISO 8601 in UTC with milliseconds (libpq: the session's DateStyle, microseconds), an
 * array `{1,2}` (libpq the same for numbers; quoting of texts may differ). The schema stores none of these (it
 * has bigint and text only); they come only from expressions, and none of the stores' reads returns one.
 */
const toText: Decoder = (v) => {
  if (v === null || typeof v === "string") return v;
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return `{${Array.from(v as ArrayLike<unknown>, (x) => (x === null ? "NULL" : String(x))).join(",")}}`;
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
};
const TEXTS = new Set([19, 25, 1043]); // name, text, varchar: strings already
const decoderOf = (type: number): Decoder =>
  TEXTS.has(type) ? asIs : NUMBERS.has(type) ? toNumber : type === BOOL ? toBit : type === BYTEA ? toBuffer : toText;

interface Result {
  rows: unknown[][];
  names: string[];
  changes: number;
}

function shape(raw: unknown[][] & { columns: SQL.ResultColumn[] | null; count: number }): Result {
  const columns = raw.columns ?? [];
  const decoders = columns.map((c) => decoderOf(c.type));
  const rows = decoders.some((d) => d !== asIs) ? raw.map((r) => r.map((v, i) => decoders[i]!(v))) : raw;
  return { rows, names: columns.map((c) => c.name), changes: raw.count ?? 0 };
}

function objects({ rows, names }: Result): Row[] {
  return rows.map((r) => {
    const o: Row = {};
    for (let i = 0; i < names.length; i++) o[names[i]!] = r[i];
    return o;
  });
}

// ------------------------------------------------------------------ the pool

export function openPgPool(url: string, options: PgPoolOptions = {}): PgPool {
  const { poolSize = 10, connectTimeoutMs = 5000, statementTimeoutMs = 30000, marginMs = 1000, listenCheckMs = 5000 } = options;
  /** The longest a call waits for anything: a connection, or the answer to a statement. */
  const deadlineMs = Math.max(connectTimeoutMs, statementTimeoutMs) + marginMs;
  // The session settings, sent in the start-up message of every connection (no round trip of their own;
  // a reconnected session has them too). NB! lock_timeout under statement_timeout: a blocked statement answers
  // 55P03 (lock not available) rather than a generic 57014.
  const connection = {
    client_min_messages: "warning",
    statement_timeout: statementTimeoutMs,
    lock_timeout: Math.min(10_000, statementTimeoutMs),
    application_name: "switchboard",
  };
  const newClient = (max: number) => new SQL(url, { max, connectionTimeout: connectTimeoutMs / 1000, connection, prepare: true });
  let sql = newClient(poolSize);
  let closed = false;
  let statements = 0;
  /** The LISTEN subscriptions still open: close() ends them too. */
  const listening = new Set<() => Promise<void>>();

  const texts = new Map<string, string>();
  const pgText = (portable: string) => {
    let t = texts.get(portable);
    if (t === undefined) {
      if (texts.size >= 5000) texts.clear();
      texts.set(portable, (t = asTextBeforeJson(toPgConflictTarget(toPgParams(portable)))));
    }
    return t;
  };

  /**
   * A pool's connections that stopped answering: closed all at once (a black hole takes them all), and a new
   * pool takes the next calls. What still waited on the old one fails with STORAGE_UNAVAILABLE.
   */
  const renewPool = (dead: SQL) => {
    if (dead !== sql || closed) return;
    sql = newClient(poolSize);
    void dead.close({ timeout: 0 }).catch(() => {});
  };

  /** One statement on `client`, bounded by the deadline; `onDeaf` runs when it was sent and never answered. */
  async function execute(client: SQL, text: string, params: readonly PgParam[], onDeaf: () => void): Promise<Result> {
    if (closed) throw new StorageUnavailableError("the pool is closed", "08003");
    statements++;
    const query = client.unsafe(pgText(text), params.map(toParam)).values();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const sent = query.active;
        query.cancel();
        if (sent) onDeaf();
        reject(new StorageUnavailableError(sent ? `no answer within ${deadlineMs} ms` : `no connection within ${deadlineMs} ms`, sent ? "08006" : "08001"));
      }, deadlineMs);
    });
    try {
      return shape(await Promise.race([query, deadline]));
    } catch (e) {
      throw toStorageError(e);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A statement outside a unit: a connection found ended by the server is left behind for the next one (Bun
   * reports each dead pooled connection once, at its next statement, with 57P01).
   * NB! Also when the server ended the session while the statement ran: it was rolled back with the session,
   * so running it again is safe — but for a termination that lands between its commit and its answer, which
   * PostgreSQL does not rule out, a write would be made twice. Writes that must not be are made idempotent
   * by their keys (DESIGN §15), as everything retried is.
   */
  async function onPool(text: string, params: readonly PgParam[] = []): Promise<Result> {
    for (let attempt = 0; ; attempt++) {
      const client = sql;
      try {
        return await execute(client, text, params, () => renewPool(client));
      } catch (e) {
        if (!stale(e) || attempt >= poolSize) throw e;
      }
    }
  }

  const runner = (exec: (text: string, params?: readonly PgParam[]) => Promise<Result>): PgRunner => ({
    all: async (text, params) => objects(await exec(text, params)),
    get: async (text, params) => objects(await exec(text, params))[0] ?? null,
    run: async (text, params) => ({ changes: (await exec(text, params)).changes }),
    values: async (text, params) => (await exec(text, params)).rows,
  });

  async function reserve(): Promise<ReservedSQL> {
    try {
      return await sql.reserve({ signal: AbortSignal.timeout(deadlineMs) });
    } catch (e) {
      const why = (e as Error)?.name === "TimeoutError" ? `no connection within ${deadlineMs} ms` : undefined;
      throw why ? new StorageUnavailableError(why, "08001", { cause: e }) : toStorageError(e);
    }
  }

  /** One attempt of a unit (see unit). */
  async function attemptUnit<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    const conn = await reserve();
    let broken = false;
    let ended = false;
    const onDeaf = () => {
      broken = true;
      void conn.close({ timeout: 0 }).catch(() => {});
    };
    const exec = (text: string, params: readonly PgParam[] = []) => {
      if (ended) throw new Error("a statement on a unit that has ended (await every statement inside the unit)");
      return execute(conn, text, params, onDeaf);
    };
    let savepoints = 0;
    const tx: PgTx = {
      ...runner(exec),
      async savepoint(inner) {
        const name = `sp${++savepoints}`;
        await exec(`SAVEPOINT ${name}`);
        try {
          const out = await inner(tx);
          await exec(`RELEASE ${name}`);
          return out;
        } catch (e) {
          if (!(e instanceof StorageUnavailableError)) {
            await exec(`ROLLBACK TO ${name}`);
            await exec(`RELEASE ${name}`);
          }
          throw e;
        }
      },
    };
    try {
      // BEGIN is not waited for: fn's first statements follow it on the connection (one round trip less a unit).
      // NB! BEGIN fails only with the connection (a session the server ended, a lost socket), and then every
      // statement sent after it fails too: none of fn's can run outside the transaction. Its error is the unit's.
      const begin = exec("BEGIN").catch((e) => {
        atBegin.add(e);
        throw e;
      });
      let out: T;
      try {
        out = await fn(tx);
      } catch (e) {
        await begin;
        throw e;
      }
      await begin;
      await exec("COMMIT");
      return out;
    } catch (e) {
      if (!broken && !(e instanceof StorageUnavailableError)) await execute(conn, "ROLLBACK", [], onDeaf).catch(() => (broken = true));
      throw e;
    } finally {
      ended = true;
      // NB! Bun closes a connection released inside an open transaction rather than pool it; a unit whose
      // connection failed is closed outright, so no later caller meets its locks or its dead socket.
      void (broken ? conn.close({ timeout: 0 }) : conn.release()).catch(() => {});
    }
  }

  async function unit<T>(fn: (tx: PgTx) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await attemptUnit(fn);
      } catch (e) {
        const conflict = e instanceof PgError && RETRY_UNIT.has(e.code);
        const staleBegin = stale(e) && atBegin.has(e as object);
        if (!(conflict && attempt < UNIT_ATTEMPTS) && !(staleBegin && attempt <= poolSize)) throw e;
        // jittered: two units that met in a deadlock should not meet again at once
        if (conflict) await Bun.sleep(attempt * 5 + Math.random() * 10 * attempt);
      }
    }
  }

  // ---------------------------------------------------------------- LISTEN

  async function listen(channel: string, onNotify: (payload: string | null) => void) {
    // Bun's listen() keeps one connection of its own and re-subscribes after a reconnect (onlisten again). A
    // black-holed connection never learns it is gone: every listenCheckMs it must hear a notification it sent
    // itself through the pool, or it is replaced.
    const probe = `switchboard:listen-check:${crypto.randomUUID()}`;
    let heard = true;
    let client: SQL | null = null;
    let stopped = false;
    let checking = false;
    const subscribe = async (gap: boolean) => {
      const own = newClient(1);
      let first = true;
      await own
        .listen(
          channel,
          (payload) => {
            if (payload === probe) heard = true;
            else if (!payload.startsWith("switchboard:listen-check:")) onNotify(payload);
          },
          () => {
            if (!first || gap) onNotify(null);
            first = false;
          },
        )
        .catch(async (e) => {
          await own.close({ timeout: 0 }).catch(() => {});
          throw e;
        });
      if (stopped) await own.close({ timeout: 0 });
      else client = own;
    };
    try {
      await subscribe(false);
    } catch (e) {
      throw toStorageError(e);
    }
    const check = setInterval(async () => {
      if (checking || stopped) return;
      checking = true;
      try {
        if (!heard) {
          const deaf = client;
          client = null;
          void deaf?.close({ timeout: 0 }).catch(() => {});
          await subscribe(true).catch(() => {}); // the database is away: the next check tries again
        }
        heard = false;
        await onPool("SELECT pg_notify(?, ?)", [channel, probe]).catch(() => {});
      } finally {
        checking = false;
      }
    }, listenCheckMs);
    check.unref();
    const unlisten = async () => {
      listening.delete(unlisten);
      stopped = true;
      clearInterval(check);
      await (client as SQL | null)?.close({ timeout: 0 }).catch(() => {});
    };
    listening.add(unlisten);
    return { unlisten };
  }

  return {
    ...runner(onPool),
    get statements() {
      return statements;
    },
    unit,
    listen,
    async ping() {
      await onPool("SELECT 1");
    },
    async close() {
      closed = true;
      await Promise.all([...listening].map((unlisten) => unlisten()));
      await sql.close({ timeout: 0 });
    },
  };
}
