/**
 * Import rows: the spooled file read as NDJSON or CSV, each row checked (TypeBox, then `checkUpsert`:
 * identities normalised, tags, custom fields) into a `CheckedRow`. Pure — no database — so it runs in the
 * import worker thread (import.worker.ts); `checkedBatches` runs it there, or inline when no worker starts.
 */
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { CHANNELS } from "../../channels/channel.types";
import { AppError } from "../../platform/errors";
import { nulPointers } from "../../platform/nul";
import { checkUpsert, type CheckedUpsert } from "./contacts.checks";
import { ContactUpsertBody, type ContactUpsertInput } from "./contacts.model";
import type { CustomFieldDef } from "./custom-fields.repository";
import { createCsvReader } from "./csv";

export type ImportFormat = "ndjson" | "csv";
type Problem = { pointer: string; message: string };

/** A data row (1-based, blank NDJSON lines not counted) after its checks: what to write, or why not. */
export type CheckedRow = { row: number; checked: CheckedUpsert; consentAt?: number } | { row: number; errors: Problem[] };

type RowResult = { body: ContactUpsertInput & { consentAt?: string } } | { error: Problem[] };

const checkRow = TypeCompiler.Compile(ContactUpsertBody);

/** Longest row (characters) an import reads; a longer one is a failed row, its text dropped as it streams by. */
export const MAX_ROW_CHARS = 1024 * 1024;
const TOO_LONG: Problem[] = [{ pointer: "/", message: `row is longer than ${MAX_ROW_CHARS} characters` }];

/** The file's lines; null for a line longer than MAX_ROW_CHARS. */
async function* lines(file: string): AsyncGenerator<string | null> {
  const decoder = new TextDecoder();
  let rest = "";
  let dropping = false; // inside a line that is already too long
  for await (const chunk of Bun.file(file).stream()) {
    rest += decoder.decode(chunk, { stream: true });
    let nl: number;
    let start = 0;
    while ((nl = rest.indexOf("\n", start)) !== -1) {
      yield dropping || nl - start > MAX_ROW_CHARS ? null : rest.slice(start, nl);
      dropping = false;
      start = nl + 1;
    }
    rest = rest.slice(start);
    if (rest.length > MAX_ROW_CHARS) {
      dropping = true;
      rest = "";
    }
  }
  rest += decoder.decode();
  if (dropping) yield null;
  else if (rest) yield rest;
}

/** NDJSON rows; the first `skip` are counted but not parsed. */
async function* ndjsonRows(file: string, skip: number): AsyncGenerator<RowResult> {
  let n = 0;
  for await (const line of lines(file)) {
    if (line === null) {
      if (n++ >= skip) yield { error: TOO_LONG };
      continue;
    }
    const text = line.trim();
    if (!text) continue;
    if (n++ < skip) {
      yield { error: [] };
      continue;
    }
    let v: unknown;
    try {
      v = JSON.parse(text);
    } catch {
      yield { error: [{ pointer: "/", message: "not valid JSON" }] };
      continue;
    }
    yield checkBody(v, text.includes("\\u0000"));
  }
}

/** `mayHoldNul`: the row's text may hold a NUL (cheap to tell from the text; the walk only then). */
function checkBody(v: unknown, mayHoldNul: boolean): RowResult {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return { error: [{ pointer: "/", message: "must be a JSON object" }] };
  if (mayHoldNul) {
    const nul = nulPointers(v);
    if (nul.length) return { error: nul.slice(0, 20) };
  }
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
  const reader = createCsvReader({ maxRecord: MAX_ROW_CHARS });
  const decoder = new TextDecoder();
  let header: ((body: Record<string, any>, cell: string) => void)[] | null = null;
  const mapRecord = (rec: string[]): RowResult => {
    const body: Record<string, any> = { identities: [] };
    const mayHoldNul = rec.some((cell) => cell.includes("\0"));
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
    return checkBody(body, mayHoldNul);
  };
  const buildHeader = (cols: string[] | null) => {
    if (!cols) throw new AppError("VALIDATION_FAILED", `The CSV header row is longer than ${MAX_ROW_CHARS} characters`);
    const unknown: string[] = [];
    header = cols.map((raw) => {
      const col = raw.trim().replace(/^\uFEFF/, "");
      if (["firstName", "lastName", "city", "country", "consentAt"].includes(col)) return (b, cell) => void (b[col] = cell);
      if (col === "tags")
        return (b, cell) =>
          void (b.tags = cell
            .split("|")
            .map((s) => s.trim())
            .filter(Boolean));
      if (col === "optIn")
        return (b, cell) => {
          const v = cell.toLowerCase();
          if (TRUE.has(v)) b.optIn = true;
          else if (FALSE.has(v)) b.optIn = false;
          else throw Object.assign(new Error("must be true or false"), { pointer: "/optIn" });
        };
      if ((CHANNELS as readonly string[]).includes(col))
        return (b, cell) => {
          for (const value of cell
            .split("|")
            .map((s) => s.trim())
            .filter(Boolean))
            b.identities.push({ channel: col, value });
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
    // (A NUL in a name is shown as \u0000: the message is stored with the import, and text cannot hold NUL.)
    if (unknown.length) throw new AppError("VALIDATION_FAILED", `Unknown CSV column(s): ${unknown.join(", ").replaceAll("\0", "\\u0000")}`);
  };
  for await (const chunk of Bun.file(file).stream()) {
    for (const rec of reader.push(decoder.decode(chunk, { stream: true }))) {
      if (!header) buildHeader(rec);
      else yield rec ? mapRecord(rec) : { error: TOO_LONG };
    }
  }
  for (const rec of reader.end()) {
    if (!header) buildHeader(rec);
    else yield rec ? mapRecord(rec) : { error: TOO_LONG };
  }
}

/** Every row after `skip` (already imported before a crash or retry), checked. CSV header problems throw AppError. */
export async function* checkedRows({
  file,
  format,
  defs,
  skip,
}: {
  file: string;
  format: ImportFormat;
  defs: Map<string, CustomFieldDef>;
  skip: number;
}): AsyncGenerator<CheckedRow> {
  let row = 0;
  for await (const r of format === "csv" ? csvRows(file, defs) : ndjsonRows(file, skip)) {
    row++;
    if (row <= skip) continue;
    if ("error" in r) {
      yield { row, errors: r.error };
      continue;
    }
    const { consentAt, ...input } = r.body;
    try {
      yield { row, checked: checkUpsert(input, defs), consentAt: consentAt ? Date.parse(consentAt) : undefined };
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      // At most 20 problems a row, as for the schema check (a row with thousands of unknown keys stays small).
      yield {
        row,
        errors: e.details.length ? e.details.slice(0, 20).map((d) => ({ pointer: d.pointer, message: d.message })) : [{ pointer: "/", message: e.message }],
      };
    }
  }
}

/**
 * A full garbage collection once the heap has grown `growth` bytes past what the last one left. Under an
 * import's allocation rate JSC lets the heap grow 3-4× between its own collections (measured at 1M rows:
 * peak RSS 358 MB without this). Relative to the live heap, so a large live heap never means a collection
 * after every batch (a fixed limit did that: 39 % of an import's time went to GC in a bigger process).
 */
export function heapKeeper(growth: number): () => void {
  let floor = process.memoryUsage().heapUsed;
  return () => {
    if (process.memoryUsage().heapUsed - floor < growth) return;
    Bun.gc(true);
    floor = process.memoryUsage().heapUsed;
  };
}

/**
 * Where the worker's entry point is. NB! In the compiled binary every module is bundled into the root and
 * the worker, built as an entry point of its own (Makefile), sits at modules/contacts/import.worker.ts
 * under it; from source it is the file beside this one.
 */
function workerUrl(): string {
  return new URL(Bun.isStandaloneExecutable ? "./modules/contacts/import.worker.ts" : "./import.worker.ts", import.meta.url).href;
}

const READ_AHEAD = 8;

/** The import worker's messages (import.worker.ts). */
export type WorkerIn =
  | { type: "start"; file: string; format: ImportFormat; defs: Map<string, CustomFieldDef>; skip: number; batchRows: number }
  | { type: "more" };
export type WorkerOut = { type: "batch"; rows: CheckedRow[] } | { type: "done" } | { type: "fatal"; message: string } | { type: "error"; message: string };

/**
 * The checked rows in batches of up to `batchRows`, read in the import worker thread (READ_AHEAD batches
 * ahead at most: enough to fill the next write transaction while this one runs, so the writer never
 * waits); inline on the calling thread when `inline` is set or no worker can start (`onFallback` is told
 * why). The worker ends when the consumer stops iterating. Throws AppError for a fatal input problem,
 * Error for I/O trouble.
 */
export async function* checkedBatches(opts: {
  file: string;
  format: ImportFormat;
  defs: Map<string, CustomFieldDef>;
  skip: number;
  batchRows: number;
  inline?: boolean;
  onFallback?: (error: unknown) => void;
}): AsyncGenerator<CheckedRow[]> {
  let worker: Worker | null = null;
  if (!opts.inline) {
    try {
      worker = new Worker(workerUrl());
    } catch (e) {
      opts.onFallback?.(e);
    }
  }
  if (!worker) {
    let batch: CheckedRow[] = [];
    for await (const row of checkedRows(opts)) {
      batch.push(row);
      if (batch.length >= opts.batchRows) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length) yield batch;
    return;
  }
  const inbox: WorkerOut[] = [];
  let wake: (() => void) | null = null;
  const push = (m: WorkerOut) => {
    inbox.push(m);
    wake?.();
    wake = null;
  };
  worker.onmessage = (e: MessageEvent<WorkerOut>) => push(e.data);
  worker.onerror = (e) => push({ type: "error", message: `import worker failed: ${e.message}` });
  try {
    worker.postMessage({ type: "start", file: opts.file, format: opts.format, defs: opts.defs, skip: opts.skip, batchRows: opts.batchRows } satisfies WorkerIn);
    for (let i = 0; i < READ_AHEAD; i++) worker.postMessage({ type: "more" });
    for (;;) {
      while (!inbox.length) await new Promise<void>((r) => (wake = r));
      const m = inbox.shift()!;
      if (m.type === "done") return;
      if (m.type === "fatal") throw new AppError("VALIDATION_FAILED", m.message);
      if (m.type === "error") throw new Error(m.message);
      worker.postMessage({ type: "more" });
      yield m.rows;
    }
  } finally {
    worker.terminate();
  }
}
