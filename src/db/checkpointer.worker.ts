/**
 * WAL checkpoints off the event loop. `serve` turns the main connection's automatic checkpoints off and
 * starts this worker on its own connection, which copies committed WAL frames into the database file with
 * PASSIVE checkpoints (they never block the main connection's reads or writes). Commits on the main
 * thread then only append to the WAL.
 *
 * NB! A WAL is rewritten from its start only when a write transaction begins while every frame is already
 * copied; under steady load the main thread commits again before a checkpoint has caught up, and the WAL
 * grew without bound (600 MB in 30 s of POST /messages). So once it holds `restartFrames`, the worker catches
 * up, asks the main thread to hold its group commits (`hold`), copies what was written meanwhile (the cost
 * is the checkpoint's two fsyncs), and lets it go on (`release`): the next group then starts the WAL over.
 *
 * Messages in: {path, intervalMs, restartFrames} to start, `held` when the main thread holds.
 * Out: {ok, log, checkpointed} | {error} | `hold` | `release`.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;

type Result = { busy: number; log: number; checkpointed: number };

/** At most this many frames (~1 MB) are left to copy while the main thread holds its group commits. */
const HOLD_FRAMES = 256;
let checkpoint: ReturnType<Database["prepare"]> | null = null;
const report = (r: Result) => postMessage({ ok: true, checkpointed: r.checkpointed, log: r.log });

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
  const { restartFrames, intervalMs } = event.data;
  const db = new Database(event.data.path);
  db.exec("PRAGMA busy_timeout = 5000");
  checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  const tick = () => {
    let next = intervalMs;
    try {
      let r = checkpoint!.get() as Result;
      if (r.log >= restartFrames) {
        // Catch up without a hold first: each pass leaves only what was committed while it ran, so a few
        // passes leave little, and the hold that follows (the main thread waits for it) copies only that.
        for (let i = 0; i < 8 && r.log - r.checkpointed > HOLD_FRAMES; i++) r = checkpoint!.get() as Result;
        if (r.log - r.checkpointed <= HOLD_FRAMES) postMessage("hold");
      }
      report(r);
      // Under steady writes, look again soon: a WAL caught up often is short to copy.
      if (r.log >= restartFrames / 4) next = Math.min(intervalMs, 50);
    } catch (e) {
      postMessage({ error: (e as Error).message });
    }
    setTimeout(tick, next);
  };
  setTimeout(tick, intervalMs);
};
