/**
 * The WAL's fdatasync on the thread pool (SQLite's group commit, group-commit.ts): a group commits with
 * synchronous=NORMAL and is answered once a sync that covers it has finished.
 */
import { closeSync, fdatasync, fstatSync, openSync, statSync } from "node:fs";

/**
 * fdatasync of the WAL file on the thread pool. `sync()` resolves once a sync that started after the call
 * has finished (so it covers every commit made before the call): one sync runs at a time, and the calls
 * that arrive meanwhile share the next one. `durable()` resolves once every commit made so far is synced
 * (at once when nothing was committed since the last sync started); commits call `committed()`.
 * The file is reopened if it is not the one at the path any more. A sync that fails rejects its callers
 * (their commits may not be durable; they are not acknowledged).
 */
export function walSync(
  walPath: string,
  datasync: typeof fdatasync = fdatasync,
): { sync(): Promise<void>; durable(): Promise<void>; committed(): void; close(): void } {
  type Round = { promise: Promise<void>; resolve(): void; reject(e: unknown): void };
  const round = (): Round => {
    const r = {} as Round;
    r.promise = new Promise<void>((resolve, reject) => Object.assign(r, { resolve, reject }));
    r.promise.catch(() => {}); // a round nobody awaits must not be an unhandled rejection
    return r;
  };
  let fd = -1;
  let closing = false;
  let dirty = false; // a commit since the last sync started
  let running: Round | null = null;
  let next: Round | null = null;
  const current = (): number => {
    const ino = statSync(walPath).ino;
    if (fd >= 0 && fstatSync(fd).ino === ino) return fd;
    if (fd >= 0) closeSync(fd);
    fd = openSync(walPath, "r");
    return fd;
  };
  const start = (r: Round) => {
    running = r;
    dirty = false;
    let syncing = -1;
    const done = (err: unknown) => {
      running = null;
      if (closing && syncing >= 0) {
        closing = false;
        closeSync(syncing);
      }
      // As SQLite names a failed fsync of its own (503 STORAGE_UNAVAILABLE, error.plugin.ts).
      if (err) r.reject(Object.assign(new Error(`fdatasync of the WAL failed: ${(err as Error).message}`), { code: "SQLITE_IOERR_FSYNC", cause: err }));
      else r.resolve();
      if (next) {
        const n = next;
        next = null;
        start(n);
      }
    };
    try {
      syncing = current();
      datasync(syncing, done);
    } catch (e) {
      done(e);
    }
  };
  const sync = (): Promise<void> => {
    if (!running) {
      const r = round();
      start(r);
      return r.promise;
    }
    return (next ??= round()).promise;
  };
  const settled = Promise.resolve();
  return {
    sync,
    durable: () => (dirty ? sync() : running ? running.promise : next ? next.promise : settled),
    committed: () => {
      dirty = true;
    },
    close() {
      // NB! Not under a sync still running on the thread pool (it would fail with EBADF): after it.
      if (running) closing = true;
      else if (fd >= 0) closeSync(fd);
      fd = -1;
    },
  };
}
