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
    PQsendQueryParams: {
      args: [FFIType.ptr, FFIType.cstring, FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.i32],
      returns: FFIType.i32,
    },
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
    PQenterPipelineMode: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQexitPipelineMode: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQpipelineSync: { args: [FFIType.ptr], returns: FFIType.i32 },
    PQpipelineStatus: { args: [FFIType.ptr], returns: FFIType.i32 },
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
const PGRES_PIPELINE_SYNC = 10;
const PGRES_PIPELINE_ABORTED = 11;
const PQTRANS_IDLE = 0;
const PQTRANS_INTRANS = 2;
const PQ_PIPELINE_OFF = 0;
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

/** One statement of a pipeline: its text and parameters. */
export interface PgStatementCall {
  text: string;
  params?: readonly PgValue[];
}

/** A statement waiting to go out ahead of the next one (see PgConnection.defer). */
interface Deferred {
  text: string;
  /** Set on `SAVEPOINT name`: what `release`/`rollbackTo` look for. */
  savepoint?: string;
  onResult?: (result: PgResult) => void;
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
  /** The next prepared statement's number (`s<n>`); a failed PREPARE leaves a gap, never a name reused. */
  private statementNumber = 0;
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
    if (this.deferred.length) return this.pipeline([{ text, params }])[0]!;
    this.counted(text);
    const l = pq();
    if (params.length === 0) {
      if (!l.PQsendQueryParams(this.conn, cstr(text), 0, null, null, null, null, 0)) this.sendFailed();
      return this.collect();
    }
    let name = this.prepared.get(text);
    if (!name) {
      name = cstr(`s${this.statementNumber++}`);
      if (!l.PQsendPrepare(this.conn, name, cstr(text), 0, null)) this.sendFailed();
      this.collect();
      this.prepared.set(text, name);
    }
    const b = bind(params); // NB! b.encoded must stay reachable until libpq has copied the texts
    if (!l.PQsendQueryPrepared(this.conn, name, b.encoded.length, ptr(b.pointers), null, null, 0)) this.sendFailed();
    return this.collect();
  }

  /** Several statements separated by `;`, no parameters, no rows (simple protocol). */
  exec(text: string): void {
    this.ensureOpen();
    // The simple protocol cannot join a pipeline: what was deferred goes first, in a round trip of its own.
    if (this.deferred.length) this.pipeline([]);
    this.counts.statements += text.split(";").filter((t) => t.trim()).length;
    this.onStatement?.(text);
    if (!pq().PQsendQuery(this.conn, cstr(text))) this.sendFailed();
    this.collect();
  }

  // ------------------------------------------------------------------ pipelines and deferred statements
  //
  // A statement whose answer nobody waits for — a SAVEPOINT, a RELEASE, a read whose value is needed only
  // later — need not cost a round trip of its own: it is deferred, and goes out in one libpq pipeline
  // (PostgreSQL ≥ 14's client) together with the next statement that is waited for.
  //
  // NB! The contract that changes: a deferred statement's error surfaces at the next statement sent (the
  // one it travelled with), which then fails with that error (same PgError, same SQLSTATE) without having
  // run. Statements are deferred only inside a healthy transaction block, where the only errors a SAVEPOINT
  // or RELEASE can meet are a lost connection (which every later statement meets too) or misuse; anywhere
  // else (no transaction, or one already failed) they run at once, as before.

  /** Statements waiting for the next round trip, in order. */
  private deferred: Deferred[] = [];
  /** Savepoints whose deferred SAVEPOINT failed or never ran (an earlier statement of its pipeline failed). */
  private readonly unestablished = new Set<string>();

  /**
   * Runs `text` (no parameters) with the next statement sent, in its round trip; `onResult` gets its rows
   * then. Outside a healthy transaction block it runs at once.
   */
  defer(text: string, onResult?: (result: PgResult) => void): void {
    if (!this.canDefer()) {
      const result = this.query(text);
      onResult?.(result);
      return;
    }
    this.deferred.push({ text, onResult });
  }

  /** `SAVEPOINT name`, deferred (see defer). */
  savepoint(name: string): void {
    if (!this.canDefer()) {
      this.unestablished.delete(name); // a new savepoint of that name, whatever became of an older one
      return void this.query(`SAVEPOINT ${name}`);
    }
    this.deferred.push({ text: `SAVEPOINT ${name}`, savepoint: name });
  }

  /** `RELEASE name`, deferred; a savepoint not sent yet, with nothing after it, is simply dropped with it. */
  release(name: string): void {
    const last = this.deferred.at(-1);
    if (last?.savepoint === name) {
      this.deferred.pop();
      return;
    }
    if (!this.canDefer()) return void this.query(`RELEASE ${name}`);
    this.deferred.push({ text: `RELEASE ${name}` });
  }

  /**
   * `ROLLBACK TO name; RELEASE name`. Nothing to undo when the savepoint was never sent (nothing was run
   * since it either) or never established (its pipeline failed before it: that error is the one the caller
   * is handling). Otherwise whatever is still deferred lies inside the savepoint and is dropped with it.
   */
  rollbackTo(name: string): void {
    const at = this.deferred.findLastIndex((d) => d.savepoint === name);
    if (at !== -1) {
      this.deferred.length = at;
      return;
    }
    if (this.unestablished.delete(name)) return;
    this.deferred = [];
    this.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
  }

  /** `ROLLBACK`: whatever is still deferred goes with the transaction. */
  rollback(): void {
    this.deferred = [];
    this.unestablished.clear();
    this.exec("ROLLBACK");
  }

  /**
   * Sends what is deferred and then `statements`, all in one round trip (one libpq pipeline, one Sync), and
   * returns the statements' results. The first error is thrown once every answer is read; the statements
   * after it did not run. Inside a transaction block an error leaves it failed, as it would one at a time;
   * outside one the pipeline is one implicit transaction (an error undoes the statements before it too).
   */
  pipeline(statements: readonly PgStatementCall[]): PgResult[] {
    this.ensureOpen();
    const l = pq();
    const conn = this.conn;
    // Bound before anything is sent: a value refused here (a NUL in a text) fails before the server sees
    // anything, as it does one statement at a time.
    const bound = statements.map((s) => (s.params?.length ? bind(s.params) : null));
    const deferred = this.deferred;
    this.deferred = [];
    type Step = { deferred?: Deferred; prepare?: { text: string; name: Uint8Array }; statement?: number };
    const steps: Step[] = [];
    if (!l.PQenterPipelineMode(conn)) this.sendFailed();
    const fresh = new Map<string, Uint8Array>(); // prepared in this pipeline: remembered once it succeeds
    for (const d of deferred) {
      this.counted(d.text);
      if (!l.PQsendQueryParams(conn, cstr(d.text), 0, null, null, null, null, 0)) this.sendFailed();
      steps.push({ deferred: d });
    }
    statements.forEach((s, i) => {
      this.counted(s.text);
      const b = bound[i];
      if (!b) {
        if (!l.PQsendQueryParams(conn, cstr(s.text), 0, null, null, null, null, 0)) this.sendFailed();
      } else {
        let name = this.prepared.get(s.text) ?? fresh.get(s.text);
        if (!name) {
          name = cstr(`s${this.statementNumber++}`);
          fresh.set(s.text, name);
          if (!l.PQsendPrepare(conn, name, cstr(s.text), 0, null)) this.sendFailed();
          steps.push({ prepare: { text: s.text, name } });
        }
        if (!l.PQsendQueryPrepared(conn, name, b.encoded.length, ptr(b.pointers), null, null, 0)) this.sendFailed();
      }
      steps.push({ statement: i });
    });
    if (!l.PQpipelineSync(conn)) this.sendFailed();
    this.counts.roundTrips++;
    this.spin();

    const results: PgResult[] = [];
    let error: Error | null = null;
    let step = 0;
    let nulls = 0;
    for (;;) {
      const res = l.PQgetResult(conn) as Pointer | null;
      if (!res) {
        // One NULL ends each statement's results; more in a row, or a lost connection: nothing else will come.
        if (++nulls > 1 || l.PQstatus(conn) !== CONNECTION_OK) break;
        continue;
      }
      nulls = 0;
      try {
        const status = l.PQresultStatus(res);
        if (status === PGRES_PIPELINE_SYNC) break;
        const s = steps[step++];
        const ok = status === PGRES_TUPLES_OK || status === PGRES_COMMAND_OK || status === PGRES_EMPTY_QUERY;
        if (!ok && status !== PGRES_PIPELINE_ABORTED) error ??= resultError(conn, res);
        if (!s) continue;
        if (s.deferred?.savepoint) {
          if (ok) this.unestablished.delete(s.deferred.savepoint);
          else this.unestablished.add(s.deferred.savepoint);
        }
        if (!ok) continue;
        if (s.prepare) this.prepared.set(s.prepare.text, s.prepare.name);
        else if (s.deferred?.onResult) s.deferred.onResult(readResult(res));
        else if (s.statement !== undefined) results[s.statement] = readResult(res);
      } catch (e) {
        error ??= e as Error;
      } finally {
        l.PQclear(res);
      }
    }
    if (!l.PQexitPipelineMode(conn) && l.PQstatus(conn) === CONNECTION_OK)
      error ??= new PgError(`PostgreSQL: ${String(l.PQerrorMessage(conn)).trim()}`, "XX000");
    if (!error && results.length < statements.length) error = new PgError(`PostgreSQL connection lost: ${String(l.PQerrorMessage(conn)).trim()}`, "08006");
    if (error) throw error;
    return results;
  }

  private canDefer(): boolean {
    return !this.closed && pq().PQstatus(this.conn) === CONNECTION_OK && pq().PQtransactionStatus(this.conn) === PQTRANS_INTRANS;
  }

  private counted(text: string): void {
    this.counts.statements++;
    this.onStatement?.(text);
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
    this.deferred = [];
    pq().PQfinish(this.conn);
  }

  private ensureOpen(): void {
    if (this.closed) throw new PgError("the PostgreSQL connection is closed", "08003");
    // A connection lost between transactions is re-established; inside one, the error reaches the caller.
    // NB! So is one left in pipeline mode by a pipeline that failed to send (its error reached the caller):
    // it could run nothing else, and its half-sent pipeline must not run with the next statement.
    if (pq().PQstatus(this.conn) !== CONNECTION_OK || pq().PQpipelineStatus(this.conn) !== PQ_PIPELINE_OFF) {
      pq().PQreset(this.conn);
      this.prepared.clear();
      this.statementNumber = 0;
      this.deferred = []; // they belonged to the lost session's transaction
      this.unestablished.clear();
      this.resets++;
      if (pq().PQstatus(this.conn) !== CONNECTION_OK)
        throw new PgError(`PostgreSQL connection lost: ${String(pq().PQerrorMessage(this.conn)).trim()}`, "08006");
      // NB! A new session: the settings of the old one (statement and lock timeouts) are gone with it.
      if (this.setup) {
        if (!pq().PQsendQuery(this.conn, cstr(this.setup))) this.sendFailed();
        this.collect();
      }
    }
  }

  /** Spins on the socket for up to SPIN_MS while the answer is on its way (then libpq blocks in poll). */
  private spin(): void {
    const l = pq();
    const until = performance.now() + SPIN_MS;
    while (l.PQconsumeInput(this.conn) && l.PQisBusy(this.conn) && performance.now() < until);
  }

  private sendFailed(): never {
    throw new PgError(`PostgreSQL: ${String(pq().PQerrorMessage(this.conn)).trim()}`, "08006");
  }

  /** Waits for the answer (spin, then block) and reads every result of it; throws the first error. */
  private collect(): PgResult {
    this.counts.roundTrips++;
    const l = pq();
    const conn = this.conn;
    this.spin();
    let out: PgResult = { fields: [], rows: [], changes: 0 };
    let error: Error | null = null;
    for (let res = l.PQgetResult(conn) as Pointer | null; res; res = l.PQgetResult(conn) as Pointer | null) {
      try {
        if (error) continue;
        const status = l.PQresultStatus(res);
        if (status === PGRES_TUPLES_OK || status === PGRES_COMMAND_OK || status === PGRES_EMPTY_QUERY) {
          out = readResult(res);
        } else error = resultError(conn, res);
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

function resultError(conn: Pointer, res: Pointer): PgError {
  const l = pq();
  const codePtr = l.PQresultErrorField(res, PG_DIAG_SQLSTATE);
  const primaryPtr = l.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
  const report = String(l.PQresultErrorMessage(res)).trim();
  // No SQLSTATE: libpq's own error — the connection was lost (08006), or something else of libpq's.
  const code = codePtr ? String(new CString(codePtr)) : l.PQstatus(conn) !== CONNECTION_OK ? "08006" : "XX000";
  return new PgError(primaryPtr ? String(new CString(primaryPtr)) : report, code, report);
}

/** Parameters as libpq takes them: an array of pointers to NUL-terminated texts (null for NULL). */
function bind(params: readonly PgValue[]): { pointers: BigUint64Array; encoded: (Uint8Array | null)[] } {
  const encoded = params.map(encodeParam);
  const pointers = new BigUint64Array(encoded.length);
  for (let i = 0; i < encoded.length; i++) {
    const b = encoded[i];
    pointers[i] = b ? BigInt(ptr(b)) : 0n;
  }
  return { pointers, encoded };
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
