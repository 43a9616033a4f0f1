/**
 * The import worker thread: reads and checks an import's rows (import-rows.ts — JSON, TypeBox,
 * libphonenumber: most of an import's CPU) off the event loop and posts them in batches. Flow control: one
 * batch per `more` credit from the main thread, so a fast reader never buffers the whole file.
 * Messages in: {type: "start", file, format, defs, skip, batchRows} | {type: "more"}.
 * Messages out: {type: "batch", rows} | {type: "done"} | {type: "fatal", message} (the import's input is
 * wrong, e.g. unknown CSV columns) | {type: "error", message} (I/O trouble; the job retries).
 */
import { AppError } from "../../platform/errors";
import { checkedRows, heapKeeper, type CheckedRow, type WorkerIn, type WorkerOut } from "./import-rows";

declare const self: Worker;

const keepHeap = heapKeeper(24 * 1024 * 1024);
let credits = 0;
let wake: (() => void) | null = null;
const post = (m: WorkerOut) => postMessage(m);

async function send(rows: CheckedRow[]) {
  while (credits === 0) await new Promise<void>((r) => (wake = r));
  credits--;
  post({ type: "batch", rows });
  keepHeap(); // this thread's heap is its own
}

async function run(m: Extract<WorkerIn, { type: "start" }>) {
  try {
    let batch: CheckedRow[] = [];
    for await (const row of checkedRows(m)) {
      batch.push(row);
      if (batch.length >= m.batchRows) {
        await send(batch);
        batch = [];
      }
    }
    if (batch.length) await send(batch);
    post({ type: "done" });
  } catch (e) {
    post(e instanceof AppError ? { type: "fatal", message: e.message } : { type: "error", message: (e as Error).message ?? String(e) });
  }
}

self.onmessage = (event: MessageEvent<WorkerIn>) => {
  const m = event.data;
  if (m.type === "start") void run(m);
  else {
    credits++;
    wake?.();
    wake = null;
  }
};
