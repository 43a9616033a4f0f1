/**
 * Bulk import (POST /contacts/import): the request body is streamed to a file under the data dir, an
 * import row and a `contacts.import` job are written in one transaction, and the job upserts the rows:
 * the import worker thread reads and checks them (import-rows.ts), the event loop writes them in
 * transactions of about IMPORT_TX_BUDGET_MS, each together with the import's counters — so a crashed or
 * retried job resumes exactly at `processed`, and a failed row never stops the import.
 *
 * Rows are upsert bodies (see upsertContact) — NDJSON one object per line, or CSV with a header row.
 * Consent rule (Listmonk's pain point): `optIn: false` always applies; `optIn: true` never overwrites an
 * explicit opt-out on a channel unless the row carries `consentAt` (ISO date-time when the consent was
 * collected) later than that opt-out. Rows kept opted out are counted in `consentKept`.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Db } from "../../db/client";
import { isConstraintViolation, perEngine } from "../../db/dialect";
import { AppError, notFound, validationFailed } from "../../platform/errors";
import type { EventBus } from "../../platform/events/events";
import { newId } from "../../platform/ids";
import type { Logger } from "../../platform/logger";
import type { Queue } from "../../platform/queue/queue";
import { customFieldDefs, deferSearchIndex, flushSearchIndex } from "./contacts.repository";
import { applyUpsert } from "./contacts.service";
import { checkedBatches, heapKeeper, type CheckedRow, type ImportFormat } from "./import-rows";

export const IMPORT_JOB = "contacts.import";
/** Stored per-row errors per import; `failed` counts every failed row. */
export const IMPORT_ERROR_CAP = 1000;

export type { ImportFormat } from "./import-rows";

export function importFormat(contentType: string | null): ImportFormat {
  const ct = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (ct === "application/x-ndjson" || ct === "application/ndjson" || ct === "application/jsonl" || ct === "application/json-seq") return "ndjson";
  if (ct === "text/csv") return "csv";
  throw validationFailed([{ pointer: "header:Content-Type", message: "must be application/x-ndjson or text/csv" }], "Unsupported import format");
}

/** Streams the body to `<data_dir>/imports/<id>.<format>`; returns the path and size. */
export async function spoolImport({ dataDir, body, format }: { dataDir: string; body: ReadableStream<Uint8Array> | null; format: ImportFormat }) {
  const dir = join(dataDir, "imports");
  mkdirSync(dir, { recursive: true });
  const id = newId();
  const filePath = join(dir, `${id}.${format}`);
  const bytes = body ? await Bun.write(filePath, new Response(body)) : 0;
  if (!bytes) {
    rmSync(filePath, { force: true });
    throw validationFailed([{ pointer: "/", message: "the import body is empty" }], "Empty import");
  }
  return { id, filePath, bytes };
}

export function createImport({
  db,
  queue,
  now,
  companyId,
  id,
  format,
  filePath,
  bytes,
}: {
  db: Db;
  queue: Pick<Queue, "enqueue">;
  now: () => Date;
  companyId: string;
  id: string;
  format: ImportFormat;
  filePath: string;
  bytes: number;
}): ContactImport {
  return db.tx(() => {
    db.$client
      .query(`INSERT INTO contact_imports (id, company_id, format, status, file_path, bytes, created_at) VALUES (?, ?, ?, 'queued', ?, ?, ?)`)
      .run(id, companyId, format, filePath, bytes, now().getTime());
    queue.enqueue({ type: IMPORT_JOB, payload: { importId: id }, maxAttempts: 5 });
    return getImport({ db, companyId, id });
  });
}

export interface ContactImport {
  id: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled";
  format: ImportFormat;
  bytes: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  consentKept: number;
  errors: { row: number; pointer: string; message: string }[];
  errorsTruncated: boolean;
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

interface RawImport {
  id: string;
  company_id: string;
  format: ImportFormat;
  status: ContactImport["status"];
  file_path: string;
  bytes: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  consent_kept: number;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function toImport(r: RawImport, errors: ContactImport["errors"]): ContactImport {
  const storedRows = new Set(errors.map((e) => e.row)).size;
  return {
    id: r.id,
    status: r.status,
    format: r.format,
    bytes: r.bytes,
    processed: r.processed,
    created: r.created,
    updated: r.updated,
    failed: r.failed,
    consentKept: r.consent_kept,
    errors,
    errorsTruncated: r.failed > storedRows,
    error: r.error,
    createdAt: iso(r.created_at)!,
    startedAt: iso(r.started_at),
    finishedAt: iso(r.finished_at),
  };
}

/**
 * A row's errors in the order they were stored: contact_import_errors has no key, so SQLite's rowid, and on
 * PostgreSQL the row's physical position (ctid) — insertion order for a table that is only appended to and
 * deleted from, never updated.
 */
const IMPORT_ERRORS = perEngine((e) => `SELECT row, pointer, message FROM contact_import_errors WHERE import_id = ? ORDER BY row, ${e === "sqlite" ? "rowid" : "ctid"}`);

export function getImport({ db, companyId, id }: { db: Db; companyId: string; id: string }): ContactImport {
  const r = db.$client.query(`SELECT * FROM contact_imports WHERE id = ? AND company_id = ?`).get(id, companyId) as RawImport | null;
  if (!r) throw notFound("Import");
  const errors = db.$client.query(IMPORT_ERRORS[db.engine]).all(id) as ContactImport["errors"];
  return toImport(r, errors);
}

export type ContactImportSummary = Omit<ContactImport, "errors" | "errorsTruncated">;

/** Up to `limit` of the company's imports before `before`, newest first (ids are UUID v7), without per-row errors. */
export function listImports({ db, companyId, limit, before }: { db: Db; companyId: string; limit: number; before?: string }): ContactImportSummary[] {
  const raw = db.$client
    .query(`SELECT * FROM contact_imports WHERE company_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3`)
    .all(companyId, before ?? null, limit) as RawImport[];
  return raw.map((r) => {
    const { errors: _errors, errorsTruncated: _truncated, ...summary } = toImport(r, []);
    return summary;
  });
}

// ------------------------------------------------------------------------------------------ the job

/**
 * Time budget of one transaction, its commit included: rows are applied until it is spent (less what the
 * previous transaction's index flush and commit took), then committed, then the event loop runs — HTTP
 * requests wait at most about this long. Bigger transactions are what makes imports fast: a commit writes
 * every b-tree page the transaction touched, and many rows share pages.
 */
export const IMPORT_TX_BUDGET_MS = 100;

type Tally = { created: number; updated: number; failed: number; kept: number; errors: [number, string, string][]; erroredRows: number };

/** The `contacts.import` job: idempotent (resumes at `processed`), yields to the event loop between transactions. */
export async function runImport({
  db,
  events,
  now,
  importId,
  log,
}: {
  db: Db;
  events: Pick<EventBus, "emit">;
  now: () => Date;
  importId: string;
  log?: Pick<Logger, "warn">;
}): Promise<void> {
  const sqlite = db.$client;
  const imp = sqlite.query(`SELECT * FROM contact_imports WHERE id = ?`).get(importId) as RawImport | null;
  if (!imp || imp.status === "completed" || imp.status === "failed") return;
  if (imp.status === "cancelled") return void rmSync(imp.file_path, { force: true });
  sqlite.query(`UPDATE contact_imports SET status = 'running', started_at = coalesce(started_at, ?) WHERE id = ?`).run(now().getTime(), importId);

  const companyId = imp.company_id;
  const stmts = {
    progress: sqlite.query(
      `UPDATE contact_imports SET processed = processed + ?, created = created + ?, updated = updated + ?, failed = failed + ?, consent_kept = consent_kept + ? WHERE id = ?`,
    ),
    error: sqlite.query(`INSERT INTO contact_import_errors (import_id, row, pointer, message) VALUES (?, ?, ?, ?)`),
  };
  let lastTailMs = 0; // index flush + commit of the previous transaction
  let storedErrors = (sqlite.query(`SELECT count(DISTINCT row) AS n FROM contact_import_errors WHERE import_id = ?`).get(importId) as { n: number }).n;

  const fail = (t: Tally, row: number, problems: { pointer: string; message: string }[]) => {
    t.failed++;
    if (storedErrors + t.erroredRows >= IMPORT_ERROR_CAP) return;
    t.erroredRows++;
    for (const p of problems) t.errors.push([row, p.pointer, p.message]);
  };
  /**
   * Applies rows[from…] until the budget is spent; returns how many it applied. Fast mode writes without a
   * savepoint per row: a CONFLICT is thrown before a row's first write, and anything else aborts the
   * transaction, after which the same rows are redone in safe mode (a savepoint each, failures per row).
   */
  const applyRows = (rows: CheckedRow[], from: number, count: number | null, safe: boolean): number => {
    const t: Tally = { created: 0, updated: 0, failed: 0, kept: 0, errors: [], erroredRows: 0 };
    const started = performance.now();
    const budget = Math.max(IMPORT_TX_BUDGET_MS / 5, IMPORT_TX_BUDGET_MS - lastTailMs);
    let rowsDone = started;
    let i = from;
    // NB! No fsync per import transaction (synchronous=NORMAL for it alone; it was a quarter of the import's
    // time). Safe because the rows commit with the import's `processed`: a power loss can only undo the
    // last transactions, and the job redoes them. The next FULL commit on the connection (any API write,
    // job claim or webhook delivery) fsyncs the WAL, these frames included, before it is acknowledged.
    // (SQLite only: on PostgreSQL every commit is durable as configured.)
    const onSqlite = db.engine === "sqlite";
    if (onSqlite) sqlite.exec("PRAGMA synchronous = NORMAL");
    try {
      db.tx(() => {
        const at = now().getTime();
        const tagIds = safe ? undefined : new Map<string, string>(); // a row's savepoint may take a new tag back
        deferSearchIndex(sqlite);
        for (; i < rows.length && (count === null ? i === from || performance.now() - started < budget : i < from + count); i++) {
          const r = rows[i]!;
          if ("errors" in r) {
            fail(t, r.row, r.errors);
            continue;
          }
          const options = { source: "import" as const, protectOptOut: true, consentAt: r.consentAt === undefined ? undefined : new Date(r.consentAt), tagIds };
          const apply = () => applyUpsert({ sqlite, events, at, companyId, checked: r.checked, options });
          try {
            const res = safe ? db.tx(apply) : apply();
            if (res.created) t.created++;
            else t.updated++;
            t.kept += res.consentKept;
          } catch (e) {
            const problems = rowProblems(e, safe);
            if (!problems) throw e;
            fail(t, r.row, problems);
          }
        }
        rowsDone = performance.now();
        flushSearchIndex(sqlite);
        for (const [row, pointer, message] of t.errors) stmts.error.run(importId, row, pointer, message);
        stmts.progress.run(i - from, t.created, t.updated, t.failed, t.kept, importId);
      });
    } finally {
      if (onSqlite) sqlite.exec("PRAGMA synchronous = FULL");
    }
    lastTailMs = performance.now() - rowsDone;
    storedErrors += t.erroredRows;
    return i - from;
  };

  /** Writes queued rows one budgeted transaction at a time (all of them when `all`, else while ≥ 1,000 remain); returns the rest. */
  const keepHeap = heapKeeper(32 * 1024 * 1024);
  const cancelled = () => (sqlite.query(`SELECT status FROM contact_imports WHERE id = ?`).get(importId) as { status: string }).status === "cancelled";
  const writePending = async (rows: CheckedRow[], all: boolean): Promise<CheckedRow[]> => {
    let from = 0;
    while (from < rows.length && (all || rows.length - from >= 1000)) {
      if (cancelled()) throw new ImportCancelled();
      let n: number;
      try {
        n = applyRows(rows, from, null, false);
      } catch {
        // Something other than a conflict failed mid-transaction (rolled back): redo those rows one savepoint each.
        n = applyRows(rows, from, Math.min(1000, rows.length - from), true);
      }
      from += n;
      keepHeap();
      // A timer, not setImmediate: requests that arrived during the transaction are answered before the next
      // one starts (with setImmediate a request could wait for two transactions).
      await Bun.sleep(1);
    }
    return rows.slice(from);
  };

  try {
    const batches = checkedBatches({ file: imp.file_path, format: imp.format, defs: customFieldDefs(sqlite, companyId), skip: imp.processed, batchRows: 1000, onFallback: (err) => log?.warn({ err }, "import worker unavailable; checking rows on the event loop") });
    let pending: CheckedRow[] = [];
    for await (const batch of batches) {
      pending = pending.length ? pending.concat(batch) : batch;
      if (pending.length < 2000) continue; // the reader runs ahead, so this waits only at the start
      pending = await writePending(pending, false);
    }
    await writePending(pending, true);
  } catch (e) {
    if (e instanceof ImportCancelled) return void rmSync(imp.file_path, { force: true }); // rows written so far stay
    if (!(e instanceof AppError)) throw e; // I/O or database trouble: the queue retries, we resume at `processed`
    sqlite.query(`UPDATE contact_imports SET status = 'failed', error = ?, finished_at = ? WHERE id = ?`).run(e.message, now().getTime(), importId);
    rmSync(imp.file_path, { force: true });
    return;
  }
  sqlite.query(`UPDATE contact_imports SET status = 'completed', finished_at = ? WHERE id = ? AND status = 'running'`).run(now().getTime(), importId);
  rmSync(imp.file_path, { force: true });
}

class ImportCancelled extends Error {}

/**
 * POST /contacts/imports/{id}/cancel: a queued or running import stops before its next transaction (rows
 * already written stay); 409 CONFLICT once it has ended.
 */
export function cancelImport({ db, now, companyId, id }: { db: Db; now: () => Date; companyId: string; id: string }): ContactImport {
  return db.tx(() => {
    const current = getImport({ db, companyId, id });
    if (current.status !== "queued" && current.status !== "running")
      throw new AppError("CONFLICT", `The import has already ended (${current.status})`, [{ pointer: "/", message: `status is ${current.status}` }]);
    db.$client.query(`UPDATE contact_imports SET status = 'cancelled', finished_at = ? WHERE id = ?`).run(now().getTime(), id);
    return getImport({ db, companyId, id });
  });
}

/**
 * A row's own problem, or null for trouble that is not the row's (I/O, disk full, busy: the job retries).
 * Fast mode (no savepoint per row) takes only CONFLICT, which is thrown before a row's first write.
 */
function rowProblems(e: unknown, safe: boolean): { pointer: string; message: string }[] | null {
  if (e instanceof AppError && (safe || e.code === "CONFLICT"))
    return e.details.length ? e.details.map((d) => ({ pointer: d.pointer, message: `${e.code === "CONFLICT" ? "CONFLICT: " : ""}${d.message}` })) : [{ pointer: "/", message: e.message }];
  if (safe && isConstraintViolation(e)) return [{ pointer: "/", message: `not stored: ${(e as Error).message}` }];
  return null;
}

/** Writes queued rows one budgeted transaction at a time (all of them when `all`, else while ≥ 1,000 remain); returns the rest. */
export function registerImportJob(deps: { db: Db; events: Pick<EventBus, "emit">; now: () => Date; queue: Pick<Queue, "register">; log: Pick<Logger, "warn"> }): void {
  deps.queue.register<{ importId: string }>(IMPORT_JOB, {
    concurrency: 1,
    handle: async (job) => runImport({ db: deps.db, events: deps.events, now: deps.now, importId: job.payload.importId, log: deps.log }),
  });
}
