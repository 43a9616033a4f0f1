/**
 * Starts the WAL checkpointer worker (checkpointer.worker.ts) for a served database and turns the main
 * connection's automatic checkpoints off. NB! If the worker fails or stops, automatic checkpoints are
 * switched back on at once, so the WAL can never grow without bound.
 */
import type { Logger } from "../platform/logger";
import type { Db } from "./client";

const DEFAULT_AUTOCHECKPOINT = 1000;

/**
 * Where the worker's entry point is. NB! In the compiled binary every module is bundled into the root
 * (import.meta.url is the bundle) and the worker, built as a second entry point (Makefile), sits at
 * db/checkpointer.worker.ts under it; from source it is the file beside this one.
 */
function workerUrl(): string {
  return new URL(Bun.isStandaloneExecutable ? "./db/checkpointer.worker.ts" : "./checkpointer.worker.ts", import.meta.url).href;
}

export function startCheckpointer({ db, path, log, intervalMs = 1000 }: { db: Db; path: string; log: Logger; intervalMs?: number }): { stop(): void } {
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
  worker.onmessage = (e: MessageEvent<{ ok?: boolean; error?: string }>) => {
    if (e.data.error) log.warn({ err: e.data.error }, "WAL checkpoint failed; will retry");
  };
  worker.onerror = (e) => fallBack("failed", e);
  worker.addEventListener("close", () => fallBack("stopped"));
  db.$client.exec("PRAGMA wal_autocheckpoint = 0");
  worker.postMessage({ path, intervalMs });
  return {
    stop() {
      stopped = true;
      worker.terminate();
      db.$client.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT}`);
    },
  };
}
