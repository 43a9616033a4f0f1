/**
 * Bulk import (POST /contacts/import): the request body is streamed to a file under the data dir, an
 * import row and a `contacts.import` job are written in one transaction, and the job upserts the rows in
 * batches of IMPORT_BATCH, each batch one transaction together with the import's counters — so a crashed
 * or retried job resumes exactly at `processed`, and a failed row (its own savepoint) never stops the import.
 *
 * Rows are upsert bodies (see upsertContact) — NDJSON one object per line, or CSV with a header row.
 * Consent rule (Listmonk's pain point): `optIn: false` always applies; `optIn: true` never overwrites an
 * explicit opt-out on a channel unless the row carries `consentAt` (ISO date-time when the consent was
 * collected) later than that opt-out. Rows kept opted out are counted in `consentKept`.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Db } from "../../db/client";
import { AppError, notFound, validationFailed } from "../../platform/errors";
import type { EventBus } from "../../platform/events/events";
import { newId } from "../../platform/ids";
import type { Queue } from "../../platform/queue/queue";
import { CHANNELS } from "../../channels/channel.types";
import { ContactUpsertBody, type ContactUpsertInput } from "./contacts.model";
import { customFieldDefs, type CustomFieldDef } from "./contacts.repository";
import { upsertContact } from "./contacts.service";
import { createCsvReader } from "./csv";

export const IMPORT_JOB = "contacts.import";
export const IMPORT_BATCH = 1000;
/** Stored per-row errors per import; `failed` counts every failed row. */
export const IMPORT_ERROR_CAP = 1000;

const checkRow = TypeCompiler.Compile(ContactUpsertBody);

export type ImportFormat = "ndjson" | "csv";

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
  status: "queued" | "running" | "completed" | "failed";
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

export function getImport({ db, companyId, id }: { db: Db; companyId: string; id: string }): ContactImport {
  const r = db.$client.query(`SELECT * FROM contact_imports WHERE id = ? AND company_id = ?`).get(id, companyId) as RawImport | null;
  if (!r) throw notFound("Import");
  const errors = db.$client
    .query(`SELECT row, pointer, message FROM contact_import_errors WHERE import_id = ? ORDER BY row, rowid`)
    .all(id) as ContactImport["errors"];
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

// ------------------------------------------------------------------------------------------ row sources

type RowResult = { body: ContactUpsertInput & { consentAt?: string } } | { error: { pointer: string; message: string }[] };

async function* lines(file: string): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of Bun.file(file).stream()) {
    rest += decoder.decode(chunk, { stream: true });
    let nl: number;
    let start = 0;
    while ((nl = rest.indexOf("\n", start)) !== -1) {
      yield rest.slice(start, nl);
      start = nl + 1;
    }
    rest = rest.slice(start);
  }
  rest += decoder.decode();
  if (rest) yield rest;
}

async function* ndjsonRows(file: string): AsyncGenerator<RowResult> {
  for await (const line of lines(file)) {
    const text = line.trim();
    if (!text) continue;
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      yield { error: [{ pointer: "/", message: "not valid JSON" }] };
      continue;
    }
    yield checkBody(v);
  }
}

function checkBody(v: unknown): RowResult {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { error: [{ pointer: "/", message: "must be a JSON object" }] };
  const errors: { pointer: string; message: string }[] = [];
  if (!checkRow.Check(v)) for (const e of checkRow.Errors(v)) if (errors.length < 20) errors.push({ pointer: e.path || "/", message: e.message });
  const consentAt = (v as { consentAt?: unknown }).consentAt;
  if (consentAt !== undefined && (typeof consentAt !== "string" || Number.isNaN(Date.parse(consentAt))))
    errors.push({ pointer: "/consentAt", message: "must be an ISO 8601 date-time" });
  return errors.length ? { error: errors } : { body: v as ContactUpsertInput };
}

const TRUE = new Set(["true", "yes", "1", "y"]);
const FALSE = new Set(["false", "no", "0", "n"]);

/**
 * CSV columns: firstName, lastName, city, country, tags (`|`-separated), optIn (true/false/yes/no/1/0),
 * consentAt, one column per channel (`whatsapp`, `email`, … — several values `|`-separated) and
 * `customFields.<key>` (or `cf.<key>`). Empty cells are absent. Unknown columns fail the import up front.
 */
async function* csvRows(file: string, defs: Map<string, CustomFieldDef>): AsyncGenerator<RowResult> {
  const reader = createCsvReader();
  const decoder = new TextDecoder();
  let header: ((body: Record<string, any>, cell: string) => void)[] | null = null;
  const mapRecord = (rec: string[]): RowResult => {
    const body: Record<string, any> = { identities: [] };
    const errors: { pointer: string; message: string }[] = [];
    header!.forEach((apply, i) => {
      const cell = (rec[i] ?? "").trim();
      if (cell === "") return;
      try {
        apply(body, cell);
      } catch (e) {
        errors.push({ pointer: (e as { pointer?: string }).pointer ?? "/", message: (e as Error).message });
      }
    });
    if (errors.length) return { error: errors };
    return checkBody(body);
  };
  const buildHeader = (cols: string[]) => {
    const unknown: string[] = [];
    header = cols.map((raw) => {
      const col = raw.trim().replace(/^\uFEFF/, "");
      if (["firstName", "lastName", "city", "country", "consentAt"].includes(col)) return (b, cell) => void (b[col] = cell);
      if (col === "tags") return (b, cell) => void (b.tags = cell.split("|").map((s) => s.trim()).filter(Boolean));
      if (col === "optIn")
        return (b, cell) => {
          const v = cell.toLowerCase();
          if (TRUE.has(v)) b.optIn = true;
          else if (FALSE.has(v)) b.optIn = false;
          else throw Object.assign(new Error("must be true or false"), { pointer: "/optIn" });
        };
      if ((CHANNELS as readonly string[]).includes(col))
        return (b, cell) => {
          for (const value of cell.split("|").map((s) => s.trim()).filter(Boolean)) b.identities.push({ channel: col, value });
        };
      const m = /^(?:customFields|cf)\.(.+)$/.exec(col);
      if (m) {
        const key = m[1]!;
        const def = defs.get(key);
        return (b, cell) => {
          b.customFields ??= {};
          if (def?.type === "number") b.customFields[key] = Number.isNaN(Number(cell)) ? cell : Number(cell);
          else if (def?.type === "boolean") b.customFields[key] = TRUE.has(cell.toLowerCase()) ? true : FALSE.has(cell.toLowerCase()) ? false : cell;
          else b.customFields[key] = cell;
        };
      }
      unknown.push(col);
      return () => {};
    });
    if (unknown.length) throw new AppError("VALIDATION_FAILED", `Unknown CSV column(s): ${unknown.join(", ")}`);
  };
  for await (const chunk of Bun.file(file).stream()) {
    for (const rec of reader.push(decoder.decode(chunk, { stream: true }))) {
      if (!header) buildHeader(rec);
      else yield mapRecord(rec);
    }
  }
  for (const rec of reader.end()) {
    if (!header) buildHeader(rec);
    else yield mapRecord(rec);
  }
}

// ------------------------------------------------------------------------------------------ the job

/** The `contacts.import` job: idempotent (resumes at `processed`), yields to the event loop between batches. */
export async function runImport({ db, events, now, importId }: { db: Db; events: Pick<EventBus, "emit">; now: () => Date; importId: string }): Promise<void> {
  const sqlite = db.$client;
  const imp = sqlite.query(`SELECT * FROM contact_imports WHERE id = ?`).get(importId) as RawImport | null;
  if (!imp || imp.status === "completed" || imp.status === "failed") return;
  sqlite.query(`UPDATE contact_imports SET status = 'running', started_at = coalesce(started_at, ?) WHERE id = ?`).run(now().getTime(), importId);

  const companyId = imp.company_id;
  const defs = customFieldDefs(sqlite, companyId);
  const stmts = {
    progress: sqlite.query(
      `UPDATE contact_imports SET processed = processed + ?, created = created + ?, updated = updated + ?, failed = failed + ?, consent_kept = consent_kept + ? WHERE id = ?`,
    ),
    error: sqlite.query(`INSERT INTO contact_import_errors (import_id, row, pointer, message) VALUES (?, ?, ?, ?)`),
  };
  let storedErrors = (sqlite.query(`SELECT count(DISTINCT row) AS n FROM contact_import_errors WHERE import_id = ?`).get(importId) as { n: number }).n;

  const source = imp.format === "csv" ? csvRows(imp.file_path, defs) : ndjsonRows(imp.file_path);
  let row = 0;
  let batch: { row: number; r: RowResult }[] = [];

  const flush = () => {
    if (!batch.length) return;
    const items = batch;
    batch = [];
    db.tx(() => {
      let created = 0;
      let updated = 0;
      let failed = 0;
      let kept = 0;
      for (const { row, r } of items) {
        let problems: { pointer: string; message: string }[] | null = null;
        if ("error" in r) problems = r.error;
        else {
          try {
            const { consentAt, ...input } = r.body;
            const res = upsertContact({
              db,
              events,
              now,
              companyId,
              input,
              options: { source: "import", protectOptOut: true, consentAt: consentAt ? new Date(consentAt) : undefined, defs },
            });
            if (res.created) created++;
            else updated++;
            kept += res.consentKept;
          } catch (e) {
            if (!(e instanceof AppError)) throw e;
            problems = e.details.length ? e.details.map((d) => ({ pointer: d.pointer, message: e.code === "CONFLICT" ? `CONFLICT: ${d.message}` : d.message })) : [{ pointer: "/", message: e.message }];
          }
        }
        if (problems) {
          failed++;
          if (storedErrors < IMPORT_ERROR_CAP) {
            storedErrors++;
            for (const p of problems) stmts.error.run(importId, row, p.pointer, p.message);
          }
        }
      }
      stmts.progress.run(items.length, created, updated, failed, kept, importId);
    });
  };

  try {
    for await (const r of source) {
      row++;
      if (row <= imp.processed) continue; // done before a crash or retry
      batch.push({ row, r });
      if (batch.length >= IMPORT_BATCH) {
        flush();
        await Bun.sleep(0); // let HTTP requests in between batches
      }
    }
    flush();
  } catch (e) {
    if (!(e instanceof AppError)) throw e; // I/O or database trouble: the queue retries, we resume at `processed`
    sqlite.query(`UPDATE contact_imports SET status = 'failed', error = ?, finished_at = ? WHERE id = ?`).run(e.message, now().getTime(), importId);
    rmSync(imp.file_path, { force: true });
    return;
  }
  sqlite.query(`UPDATE contact_imports SET status = 'completed', finished_at = ? WHERE id = ?`).run(now().getTime(), importId);
  rmSync(imp.file_path, { force: true });
}

export function registerImportJob(deps: { db: Db; events: Pick<EventBus, "emit">; now: () => Date; queue: Pick<Queue, "register"> }): void {
  deps.queue.register<{ importId: string }>(IMPORT_JOB, {
    concurrency: 1,
    handle: async (job) => runImport({ db: deps.db, events: deps.events, now: deps.now, importId: job.payload.importId }),
  });
}
