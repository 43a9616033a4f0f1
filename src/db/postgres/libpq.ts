/**
 * A synchronous PostgreSQL connection: libpq (Debian's `libpq5`, the client library of PostgreSQL itself)
 * through bun:ffi. Synchronous on purpose: the appliance's data layer is synchronous (bun:sqlite), and a
 * blocking client lets the same services, transactions and group commit run on PostgreSQL unchanged.
 *
 * Measured on loopback (2 cores, PostgreSQL 15): a one-row statement costs ~70 µs when the thread sleeps in
 * libpq's poll() (two wake-ups), ~30 µs when it spins on PQconsumeInput for the answer — so a statement
 * spins for up to SPIN_MS and then blocks. Bun's own async SQL client answers in ~22 µs, but only to code
 * that awaits; a worker-thread bridge to it (postMessage + Atomics.wait) cost ~110 µs a statement.
 *
 * Statements with parameters are prepared once per connection (named `s<n>`) and then only bound and
 * executed. Values travel in text format; results are decoded by column type like bun:sqlite returns them
 * (integers and numerics → number, booleans → 1/0, bytea → Buffer, everything else → string).
 */
import { CString, dlopen, FFIType, ptr, read, type Pointer } from "bun:ffi";

const LIBRARY = process.env.SWITCHBOARD_LIBPQ ?? "libpq.so.5";

function load() {
  const { symbols } = dlopen(LIBRARY, {
    PQconnectdb: { args: [FFIType.cstring], returns: FFIType.ptr },
    PQstatus: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQerrorMessage: { args: [FFIType.ptr], returns: FFIType.cstring },
    PQfinish: { args: [FFIType.ptr], returns: FFIType.void },
    PQreset: { args: [FFIType.ptr], returns: FFIType.void },
    PQtransactionStatus: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQsendQuery: { args: [FFIType.ptr, FFIType.cstring], returns: FFIType.i32 },
    PQsendQueryParams: { args: [FFIType.ptr, FFIType.cstring, FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    PQsendPrepare: { args: [FFIType.ptr, FFIType.cstring, FFIType.cstring, FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
    PQsendQueryPrepared: { args: [FFIType.ptr, FFIType.cstring, FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    PQconsumeInput: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQisBusy: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQgetResult: { args: [FFIType.ptr], returns: FFIType.ptr },
    PQresultStatus: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQresultErrorMessage: { args: [FFIType.ptr], returns: FFIType.cstring },
    PQresultErrorField: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.ptr },
    PQntuples: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQnfields: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQfname: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.cstring },
    PQftype: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.u32 },
    PQgetvalue: { args: [FFIType.ptr, FFIType.i32, FFIType.i32], returns: FFIType.ptr },
    PQgetlength: { args: [FFIType.ptr, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    PQgetisnull: { args: [FFIType.ptr, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    PQcmdTuples: { args: [FFIType.ptr], returns: FFIType.cstring },
    PQclear: { args: [FFIType.ptr], returns: FFIType.void },
    PQnotifies: { args: [FFIType.ptr], returns: FFIType.ptr },
    PQfreemem: { args: [FFIType.ptr], returns: FFIType.void },
    PQbackendPID: { args: [FFIType.ptr], returns: FFIType.i32 },
  });
  return symbols;
}

let lib: ReturnType<typeof load> | null = null;
function pq() {
  if (!lib) {
    try {
      lib = load();
    } catch (e) {
      throw new Error(`PostgreSQL needs libpq (Debian: apt install libpq5): could not load ${LIBRARY}: ${(e as Error).message}`);
    }
  }
  return lib;
}

const CONNECTION_OK = 0;
const PGRES_EMPTY_QUERY = 0;
const PGRES_COMMAND_OK = 1;
const PGRES_TUPLES_OK = 2;
const PQTRANS_IDLE = 0;
const PG_DIAG_SQLSTATE = "C".charCodeAt(0);
const PG_DIAG_MESSAGE_PRIMARY = "M".charCodeAt(0);
const SPIN_MS = 0.2;

/** Every appliance session's settings (openPostgres, and worker threads' own connections). */
export const SESSION_SETTINGS = "SET client_min_messages = warning; SET statement_timeout = '30s'; SET lock_timeout = '10s'";

/**
 * An error PostgreSQL answered with; `code` is its SQLSTATE (23505 unique violation, 40P01 deadlock, …).
 * `message` is the server's primary message alone ("tag refused", as bun:sqlite's message is SQLite's), so
 * what the services pass on (an import row's "not stored: …") reads the same on both engines; `report` is
 * libpq's whole text (severity, DETAIL, HINT, CONTEXT, the statement position) for the logs.
 */
export class PgError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly report?: string,
  ) {
    super(message);
    this.name = "PgError";
  }
}

export type PgValue = string | number | bigint | boolean | null | undefined | Uint8Array;
export interface PgResult {
  fields: string[];
  rows: unknown[][];
  /** Rows inserted, updated or deleted (PQcmdTuples). */
  changes: number;
}

const encoder = new TextEncoder();
const cstr = (s: string) => encoder.encode(`${s}\0`);

function encodeParam(v: PgValue): Uint8Array | null {
  if (v === null || v === undefined) return null;
  if (typeof v === "string") {
    // NB! libpq reads a parameter up to its first NUL: "vip\0x" would arrive as "vip" and match (or delete)
    // another row. PostgreSQL's text cannot hold NUL anyway: refuse it, with the error the server gives.
    if (v.includes("\0")) throw new PgError('invalid byte sequence for encoding "UTF8": 0x00', "22021");
    return cstr(v);
  }
  if (typeof v === "number" || typeof v === "bigint") return cstr(String(v));
  if (typeof v === "boolean") return cstr(v ? "1" : "0"); // as bun:sqlite binds them
  if (v instanceof Uint8Array) return cstr(`\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}`);
  throw new TypeError(`cannot bind a ${typeof v} to a PostgreSQL parameter`);
}

// Type OIDs (pg_type): how a text-format value becomes a JS value.
const INT_TYPES = new Set([20, 21, 23, 26, 700, 701, 1700]); // int8, int2, int4, oid, float4, float8, numeric
const BOOL = 16;
const BYTEA = 17;

export class PgConnection {
  private conn: Pointer;
  private readonly prepared = new Map<string, Uint8Array>();
  private closed = false;
  /** How often the connection was re-established (a new session: its LISTENs and locks are gone). */
  resets = 0;
  /** Statements sent and waits for the server's answer (round trips) so far: what a profile counts. */
  readonly counts = { statements: 0, roundTrips: 0 };
  /** When set, called with each statement's text as it is sent (profiling). */
  onStatement: ((text: string) => void) | null = null;

  /** Statements every session of this connection starts with (SET …): run on connect and after a reset. */
  private readonly setup: string;

  constructor(url: string, { setup = "" }: { setup?: string } = {}) {
    const conn = pq().PQconnectdb(cstr(url));
    if (!conn) throw new Error("PostgreSQL: out of memory connecting");
    if (pq().PQstatus(conn) !== CONNECTION_OK) {
      const message = String(pq().PQerrorMessage(conn)).trim();
      pq().PQfinish(conn);
      throw new PgError(`could not connect to PostgreSQL: ${message}`, "08001");
    }
    this.conn = conn as Pointer;
    this.setup = setup;
    if (setup) this.exec(setup);
  }

  get inTransaction(): boolean {
    return pq().PQtransactionStatus(this.conn) !== PQTRANS_IDLE;
  }

  /** Runs one statement (prepared once per text when it has parameters) and returns its rows. */
  query(text: string, params: readonly PgValue[] = []): PgResult {
    this.ensureOpen();
    this.counts.statements++;
    this.onStatement?.(text);
    const l = pq();
    if (params.length === 0) {
      if (!l.PQsendQueryParams(this.conn, cstr(text), 0, null, null, null, null, 0)) this.sendFailed();
      return this.collect();
    }
    let name = this.prepared.get(text);
    if (!name) {
      name = cstr(`s${this.prepared.size}`);
      if (!l.PQsendPrepare(this.conn, name, cstr(text), 0, null)) this.sendFailed();
      this.collect();
      this.prepared.set(text, name);
    }
    const encoded = params.map(encodeParam);
    const pointers = new BigUint64Array(encoded.length);
    for (let i = 0; i < encoded.length; i++) {
      const b = encoded[i];
      pointers[i] = b ? BigInt(ptr(b)) : 0n;
    }
    if (!l.PQsendQueryPrepared(this.conn, name, encoded.length, ptr(pointers), null, null, 0)) this.sendFailed();
    return this.collect();
  }

  /** Several statements separated by `;`, no parameters, no rows (simple protocol). */
  exec(text: string): void {
    this.ensureOpen();
    this.counts.statements += text.split(";").filter((t) => t.trim()).length;
    this.onStatement?.(text);
    if (!pq().PQsendQuery(this.conn, cstr(text))) this.sendFailed();
    this.collect();
  }

  /**
   * Notifications (LISTEN) from other sessions received so far, without waiting: reads what has arrived on
   * the socket. A connection that is gone counts as one (whatever was listened for may have been missed).
   */
  notifications(): number {
    if (this.closed) return 0;
    const l = pq();
    // NB! Twice: a terminated session sends its FATAL message, then closes; the first read may take only
    // the message, the second sees the end of the stream and marks the connection bad.
    if (!l.PQconsumeInput(this.conn) || !l.PQconsumeInput(this.conn) || l.PQstatus(this.conn) !== CONNECTION_OK) return 1;
    const self = l.PQbackendPID(this.conn);
    let n = 0;
    for (let p = l.PQnotifies(this.conn) as Pointer | null; p; p = l.PQnotifies(this.conn) as Pointer | null) {
      if (read.i32(p, 8) !== self) n++; // struct pgNotify { char *relname; int be_pid; … }
      l.PQfreemem(p);
    }
    return n;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    pq().PQfinish(this.conn);
  }

  private ensureOpen(): void {
    if (this.closed) throw new PgError("the PostgreSQL connection is closed", "08003");
    // A connection lost between transactions is re-established; inside one, the error reaches the caller.
    if (pq().PQstatus(this.conn) !== CONNECTION_OK) {
      pq().PQreset(this.conn);
      this.prepared.clear();
      this.resets++;
      if (pq().PQstatus(this.conn) !== CONNECTION_OK) throw new PgError(`PostgreSQL connection lost: ${String(pq().PQerrorMessage(this.conn)).trim()}`, "08006");
      // NB! A new session: the settings of the old one (statement and lock timeouts) are gone with it.
      if (this.setup) {
        if (!pq().PQsendQuery(this.conn, cstr(this.setup))) this.sendFailed();
        this.collect();
      }
    }
  }

  private sendFailed(): never {
    throw new PgError(`PostgreSQL: ${String(pq().PQerrorMessage(this.conn)).trim()}`, "08006");
  }

  /** Waits for the answer (spin, then block) and reads every result of it; throws the first error. */
  private collect(): PgResult {
    this.counts.roundTrips++;
    const l = pq();
    const conn = this.conn;
    const until = performance.now() + SPIN_MS;
    while (l.PQconsumeInput(conn) && l.PQisBusy(conn) && performance.now() < until);
    let out: PgResult = { fields: [], rows: [], changes: 0 };
    let error: Error | null = null;
    for (let res = l.PQgetResult(conn) as Pointer | null; res; res = l.PQgetResult(conn) as Pointer | null) {
      try {
        if (error) continue;
        const status = l.PQresultStatus(res);
        if (status === PGRES_TUPLES_OK || status === PGRES_COMMAND_OK || status === PGRES_EMPTY_QUERY) {
          out = readResult(res);
        } else {
          const codePtr = l.PQresultErrorField(res, PG_DIAG_SQLSTATE);
          const primaryPtr = l.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
          const report = String(l.PQresultErrorMessage(res)).trim();
          // No SQLSTATE: libpq's own error — the connection was lost (08006), or something else of libpq's.
          const code = codePtr ? String(new CString(codePtr)) : l.PQstatus(conn) !== CONNECTION_OK ? "08006" : "XX000";
          error = new PgError(primaryPtr ? String(new CString(primaryPtr)) : report, code, report);
        }
      } catch (e) {
        error = e as Error;
      } finally {
        l.PQclear(res);
      }
    }
    if (error) throw error;
    return out;
  }
}

function readResult(res: Pointer): PgResult {
  const l = pq();
  const nRows = l.PQntuples(res);
  const nFields = l.PQnfields(res);
  const fields: string[] = [];
  const types: number[] = [];
  for (let c = 0; c < nFields; c++) {
    fields.push(String(l.PQfname(res, c)));
    types.push(l.PQftype(res, c));
  }
  const rows: unknown[][] = new Array(nRows);
  for (let r = 0; r < nRows; r++) {
    const row = new Array(nFields);
    for (let c = 0; c < nFields; c++) {
      if (l.PQgetisnull(res, r, c)) {
        row[c] = null;
        continue;
      }
      const length = l.PQgetlength(res, r, c);
      const text = length ? new CString(l.PQgetvalue(res, r, c)!, 0, length).toString() : "";
      const type = types[c]!;
      row[c] = INT_TYPES.has(type) ? Number(text) : type === BOOL ? (text === "t" ? 1 : 0) : type === BYTEA ? Buffer.from(text.slice(2), "hex") : text;
    }
    rows[r] = row;
  }
  const tuples = String(l.PQcmdTuples(res));
  return { fields, rows, changes: tuples ? Number(tuples) : 0 };
}
