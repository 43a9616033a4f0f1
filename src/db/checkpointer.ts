/**
 * Starts the WAL checkpointer worker (checkpointer.worker.ts) for a served database and turns the main
 * connection's automatic checkpoints off. NB! If the worker fails or stops, automatic checkpoints are
 * switched back on at once, so the WAL can never grow without bound.
 */
import type { Db } from "./client";

const DEFAULT_AUTOCHECKPOINT = 1000;
const MAX_HOLD_MS = 100;

/**
 * Where the worker's entry point is. NB! In the compiled binary every module is bundled into the root
 * (import.meta.url is the bundle) and the worker, built as a second entry point (Makefile), sits at
 * db/checkpointer.worker.ts under it; from source it is the file beside this one.
 */
function workerUrl(): string {
  return new URL(Bun.isStandaloneExecutable ? "./db/checkpointer.worker.ts" : "./checkpointer.worker.ts", import.meta.url).href;
}

/**
 * `restartFrames`: the WAL size (in pages, 4 KB) at which the worker holds group commits briefly so the WAL
 * starts over (checkpointer.worker.ts); ~64 MB. SQLite's own automatic checkpoint starts at 1,000.
 */
export function startCheckpointer({
  db,
  path,
  log,
  intervalMs = 1000,
  restartFrames = 16_384,
}: {
  db: Db;
  path: string;
  /** The platform logger's shape (pino), so the database room needs nothing above it. */
  log: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  intervalMs?: number;
  restartFrames?: number;
}): { stop(): void } {
  let worker: Worker;
  try {
    worker = new Worker(workerUrl());
  } catch (e) {
    log.warn({ err: e }, "WAL checkpointer unavailable; checkpoints stay on the main connection");
    return { stop() {} };
  }
  let stopped = false;
  const fallBack = (why: string, err?: unknown) => {
    if (stopped) return;
    stopped = true;
    db.$client.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
    log.error({ err }, `WAL checkpointer ${why}; automatic checkpoints are back on the main connection`);
  };
  // The worker's hold (checkpointer.worker.ts): group commits wait while it copies the WAL's last frames;
  // never longer than MAX_HOLD_MS, whatever the worker does.
  let holdTimer: ReturnType<typeof setTimeout> | null = null;
  const release = () => {
    if (holdTimer) clearTimeout(holdTimer);
    holdTimer = null;
    db.holdGroups(false);
  };
  worker.onmessage = (e: MessageEvent<{ ok?: boolean; error?: string } | "hold" | "release">) => {
    if (e.data === "hold") {
      if (stopped || holdTimer) return;
      db.holdGroups(true);
      holdTimer = setTimeout(release, MAX_HOLD_MS);
      worker.postMessage("held");
    } else if (e.data === "release") release();
    else if (e.data.error) log.warn({ err: e.data.error }, "WAL checkpoint failed; will retry");
  };
  worker.onerror = (e) => {
    release();
    fallBack("failed", e);
  };
  worker.addEventListener("close", () => {
    release();
    fallBack("stopped");
  });
  db.$client.exec("PRAGMA wal_autocheckpoint = 0");
  worker.postMessage({ path, intervalMs, restartFrames });
  return {
    stop() {
      stopped = true;
      release();
      worker.terminate();
      db.$client.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
    },
  };
}
