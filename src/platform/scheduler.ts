/**
 * Recurring work on croner (housekeeping, template sync, ...). Modules register with `every`; nothing
 * runs until `start()` (serve calls it; tests call the registered functions themselves).
 * One-off future work is not scheduled here: it is a job with `runAt` in the durable queue, which
 * survives restarts and catches up overdue runs by itself (croner silently never fires a past Date).
 * NB! croner's `name` option is process-global; names here are only for logs, so several apps can live
 * in one test process.
 * With several instances on one PostgreSQL, a task runs only on the leader (platform/leader.ts), unless it
 * is registered `perInstance` (it works on this process's own memory, e.g. flushing its counters).
 */
import { Cron } from "croner";
import type { Logger } from "./logger";

export interface Scheduler {
  /** `pattern`: cron with seconds (6 fields), e.g. "0 *\/5 * * * *". Errors are logged, never thrown. */
  every(name: string, pattern: string, fn: () => unknown, options?: { perInstance?: boolean }): void;
  /** Registered tasks by name (tests run them by hand). */
  readonly tasks: ReadonlyMap<string, () => unknown>;
  start(): void;
  stop(): void;
}

export function createScheduler({ log, isLeader = () => true }: { log: Logger; isLeader?: () => boolean }): Scheduler {
  const tasks = new Map<string, { pattern: string; fn: () => unknown; perInstance: boolean }>();
  const running = new Set<Cron>();
  return {
    every(name, pattern, fn, options) {
      tasks.set(name, { pattern, fn, perInstance: options?.perInstance ?? false });
    },
    get tasks() {
      return new Map([...tasks].map(([n, t]) => [n, t.fn]));
    },
    start() {
      for (const [name, { pattern, fn, perInstance }] of tasks) {
        running.add(
          new Cron(pattern, { protect: true, catch: (e) => log.error({ err: e, schedule: name }, "scheduled task failed") }, async () => {
            if (perInstance || isLeader()) await fn();
          }),
        );
      }
    },
    stop() {
      for (const j of [...running]) j.stop();
      running.clear();
    },
  };
}
