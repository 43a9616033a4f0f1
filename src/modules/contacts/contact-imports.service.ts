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
import { isConstraintViolation } from "../../db/dialect";
import { AppError, notFound, validationFailed } from "../../platform/errors";
import type { EventBus } from "../../events";
import { newId } from "../../platform/ids";
import type { Logger } from "../../platform/logger";
import type { Queue } from "../../jobs";
import { importsStore, type ImportRow } from "./contact-imports.repository";
import { contactsStore } from "./contacts.repository";
import { applyUpsert } from "./contacts.upsert";
import { customFieldsStore } from "./custom-fields.repository";
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

export async function createImport({
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
  queue: Pick<Queue, "enqueueJob">;
  now: () => Date;
  companyId: string;
  id: string;
  format: ImportFormat;
  filePath: string;
  bytes: number;
}): Promise<ContactImport> {
  const store = importsStore(db);
  return await db.join(async () => {
    await store.insertImport({ id, companyId, format, filePath, bytes, at: now().getTime() });
    await queue.enqueueJob({ type: IMPORT_JOB, payload: { importId: id }, maxAttempts: 5 });
    return await getImport({ db, companyId, id });
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

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function toImport(r: ImportRow, errors: ContactImport["errors"]): ContactImport {
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

export async function getImport({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<ContactImport> {
  const store = importsStore(db);
  const r = await store.importOfCompany(companyId, id);
  if (!r) throw notFound("Import");
  return toImport(r, await store.importErrors(id));
}

export type ContactImportSummary = Omit<ContactImport, "errors" | "errorsTruncated">;

/** Up to `limit` of the company's imports before `before`, newest first (ids are UUID v7), without per-row errors. */
export async function listImports({
  db,
  companyId,
  limit,
  before,
}: {
  db: Db;
  companyId: string;
  limit: number;
  before?: string;
}): Promise<ContactImportSummary[]> {
  return (await importsStore(db).listImports(companyId, before, limit)).map((r) => {
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

/** Rows a transaction holds the writes of at most (PostgreSQL; see applyRows). */
const HELD_ROWS = 1000;

/** The identities of rows[from, to) that passed their checks. */
function identitiesOf(rows: CheckedRow[], from: number, to: number): { channel: string; value: string }[] {
  const out: { channel: string; value: string }[] = [];
  for (let i = from; i < to; i++) {
    const r = rows[i]!;
    if ("checked" in r) for (const id of r.checked.identities) out.push({ channel: id.channel, value: id.value });
  }
  return out;
}

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
  const store = importsStore(db);
  const contacts = contactsStore(db);
  const imp = await store.importById(importId);
  if (!imp || imp.status === "completed" || imp.status === "failed") return;
  if (imp.status === "cancelled") return void rmSync(imp.file_path, { force: true });
  await store.markRunning(importId, now().getTime());

  const companyId = imp.company_id;
  let lastTailMs = 0; // index flush + commit of the previous transaction
  let storedErrors = await store.erroredRows(importId);

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
  const applyRows = async (rows: CheckedRow[], from: number, count: number | null, safe: boolean): Promise<number> => {
    let t: Tally = { created: 0, updated: 0, failed: 0, kept: 0, errors: [], erroredRows: 0 };
    let i = from;
    let rowsDone = performance.now();
    const budget = Math.max(IMPORT_TX_BUDGET_MS / 5, IMPORT_TX_BUDGET_MS - lastTailMs);
    // A unit of its own, in the group commit after the requests waiting (background): its commit is synced
    // (off the event loop) like every group's, so it carries no other write without fsync (the import's
    // unsynced transactions went with the synchronous one). Awaited before the next, as the transaction was.
    // NB! fn may run twice (a group whose other item threw runs again): all it counts starts over in it.
    await db.unit(
      async () => {
        t = { created: 0, updated: 0, failed: 0, kept: 0, errors: [], erroredRows: 0 };
        const started = performance.now();
        // PostgreSQL, fast mode: the rows' writes are held and sent as a few multi-row statements at the end (the
        // store's HeldImportWrites, held by this chain alone: API writes run beside it in units of their own), up
        // to HELD_ROWS rows a transaction; a round trip per statement was what an import cost there. Safe mode
        // writes each row at once (its savepoint must be able to take it back).
        const at = now().getTime();
        const tagIds = safe ? undefined : new Map<string, string>(); // a row's savepoint may take a new tag back
        await contacts.deferSearchIndex();
        const hold = !safe && contacts.holdsImportWrites;
        const end = hold ? Math.min(rows.length, from + (count ?? HELD_ROWS)) : rows.length;
        await contacts.withImportWrites(hold ? { companyId, identities: identitiesOf(rows, from, end) } : null, async () => {
          for (i = from; i < end && (count === null ? i === from || performance.now() - started < budget : i < from + count); i++) {
            const r = rows[i]!;
            if ("errors" in r) {
              fail(t, r.row, r.errors);
              continue;
            }
            const options = {
              source: "import" as const,
              protectOptOut: true,
              consentAt: r.consentAt === undefined ? undefined : new Date(r.consentAt),
              tagIds,
            };
            const apply = () => applyUpsert({ db, events, at, companyId, checked: r.checked, options });
            try {
              const res = safe ? await db.unit(apply) : await apply();
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
        });
        await contacts.flushSearchIndex();
        for (const [row, pointer, message] of t.errors) await store.insertImportError(importId, row, pointer, message);
        await store.addProgress(importId, { processed: i - from, created: t.created, updated: t.updated, failed: t.failed, consentKept: t.kept });
      },
      { background: true },
    );
    lastTailMs = performance.now() - rowsDone;
    storedErrors += t.erroredRows;
    return i - from;
  };

  /** Writes queued rows one budgeted transaction at a time (all of them when `all`, else while ≥ 1,000 remain); returns the rest. */
  const keepHeap = heapKeeper(32 * 1024 * 1024);
  const cancelled = async () => (await store.importStatus(importId)) === "cancelled";
  const writePending = async (rows: CheckedRow[], all: boolean): Promise<CheckedRow[]> => {
    let from = 0;
    while (from < rows.length && (all || rows.length - from >= 1000)) {
      if (await cancelled()) throw new ImportCancelled();
      let n: number;
      try {
        n = await applyRows(rows, from, null, false);
      } catch {
        // Something other than a conflict failed mid-transaction (rolled back): redo those rows one savepoint each.
        n = await applyRows(rows, from, Math.min(1000, rows.length - from), true);
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
    const batches = checkedBatches({
      file: imp.file_path,
      format: imp.format,
      defs: await customFieldsStore(db).customFieldDefs(companyId),
      skip: imp.processed,
      batchRows: 1000,
      onFallback: (err) => log?.warn({ err }, "import worker unavailable; checking rows on the event loop"),
    });
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
    await store.markFailed(importId, e.message, now().getTime());
    rmSync(imp.file_path, { force: true });
    return;
  }
  await store.markCompleted(importId, now().getTime());
  rmSync(imp.file_path, { force: true });
}

class ImportCancelled extends Error {}

/**
 * POST /contacts/imports/{id}/cancel: a queued or running import stops before its next transaction (rows
 * already written stay); 409 CONFLICT once it has ended.
 */
export async function cancelImport({ db, now, companyId, id }: { db: Db; now: () => Date; companyId: string; id: string }): Promise<ContactImport> {
  return await db.join(async () => {
    const current = await getImport({ db, companyId, id });
    if (current.status !== "queued" && current.status !== "running")
      throw new AppError("CONFLICT", `The import has already ended (${current.status})`, [{ pointer: "/", message: `status is ${current.status}` }]);
    await importsStore(db).markCancelled(id, now().getTime());
    return await getImport({ db, companyId, id });
  });
}

/**
 * A row's own problem, or null for trouble that is not the row's (I/O, disk full, busy: the job retries).
 * Fast mode (no savepoint per row) takes only CONFLICT, which is thrown before a row's first write.
 */
function rowProblems(e: unknown, safe: boolean): { pointer: string; message: string }[] | null {
  if (e instanceof AppError && (safe || e.code === "CONFLICT"))
    return e.details.length
      ? e.details.map((d) => ({ pointer: d.pointer, message: `${e.code === "CONFLICT" ? "CONFLICT: " : ""}${d.message}` }))
      : [{ pointer: "/", message: e.message }];
  if (safe && isConstraintViolation(e)) return [{ pointer: "/", message: `not stored: ${(e as Error).message}` }];
  return null;
}

/** Registers the `contacts.import` job (one import at a time). */
export function registerImportJob(deps: {
  db: Db;
  events: Pick<EventBus, "emit">;
  now: () => Date;
  queue: Pick<Queue, "register">;
  log: Pick<Logger, "warn">;
}): void {
  deps.queue.register(IMPORT_JOB, {
    concurrency: 1,
    handle: async (job) => runImport({ db: deps.db, events: deps.events, now: deps.now, importId: job.payload.importId, log: deps.log }),
  });
}
