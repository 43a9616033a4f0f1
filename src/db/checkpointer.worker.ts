/**
 * WAL checkpoints off the event loop. `serve` turns the main connection's automatic checkpoints off and
 * starts this worker on its own connection, which copies committed WAL frames into the database file with
 * PASSIVE checkpoints (they never block the main connection's reads or writes). Commits on the main
 * thread then only append to the WAL. Messages: in {path, intervalMs}; out {ok, checkpointed} | {error}.
 */
import { Database } from "bun:sqlite";

declare const self: Worker;

self.onmessage = (event: MessageEvent<{ path: string; intervalMs: number }>) => {
  const db = new Database(event.data.path);
  db.exec("PRAGMA busy_timeout = 5000");
  const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  setInterval(() => {
    try {
      const r = checkpoint.get() as { busy: number; log: number; checkpointed: number };
      postMessage({ ok: true, checkpointed: r.checkpointed, log: r.log });
    } catch (e) {
      postMessage({ error: (e as Error).message });
    }
  }, event.data.intervalMs);
};
