/**
 * WAL checkpoints off the event loop. `serve` turns the main connection's automatic checkpoints off and
 * starts this worker on its own connection, which copies committed WAL frames into the database file with
 * PASSIVE checkpoints (they never block the main connection's reads or writes). Commits on the main
 * thread then only append to the WAL.
 *
 * NB! A WAL is rewritten from its start only when a write transaction begins while every frame is already
 * copied; under steady load the main thread commits again before a checkpoint has caught up, and the WAL
 * grew without bound (600 MB in 30 s of POST /messages). So once it holds `restartFrames`, the worker asks the
 * main thread to hold its group commits (`hold`), copies what was written meanwhile (a few ms), and lets
 * it go on (`release`): the next group then starts the WAL over.
 *
 * Messages in: {path, intervalMs, restartFrames} to start, `held` when the main thread holds. Out: {ok, log, checkpointed} |
 * {error} | `hold` | `release`.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;


type Result = { busy: number; log: number; checkpointed: number };

self.onmessage = (event: MessageEvent<{ path: string; intervalMs: number; restartFrames: number } | "held">) => {
  if (event.data === "held") {
    // The main thread commits no group now: what this pass copies is the whole WAL, unless a plain
    // transaction wrote meanwhile (then the WAL starts over at a later round).
    try {
      report(checkpoint!.get() as Result);
    } catch (e) {
      postMessage({ error: (e as Error).message });
    }
    postMessage("release");
    return;
  }
  const { restartFrames } = event.data;
  const db = new Database(event.data.path);
  db.exec("PRAGMA busy_timeout = 5000");
  checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  setInterval(() => {
    try {
      const r = checkpoint!.get() as Result;
      report(r);
      // Caught up but for what arrived during this pass: ask for the short hold that lets the WAL restart.
      if (r.log >= restartFrames) postMessage("hold");
    } catch (e) {
      postMessage({ error: (e as Error).message });
    }
  }, event.data.intervalMs);
};

let checkpoint: ReturnType<Database["prepare"]> | null = null;
const report = (r: Result) => postMessage({ ok: true, checkpointed: r.checkpointed, log: r.log });
