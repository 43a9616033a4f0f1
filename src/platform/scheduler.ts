/**
 * Recurring work on croner (housekeeping, template sync, ...). One-off future work is not scheduled here:
 * it is a job with `runAt` in the durable queue, which survives restarts and catches up overdue runs by
 * itself (croner silently never fires a past Date).
 */
import { Cron } from "croner";
import type { Logger } from "./logger";

export interface Scheduler {
  /** `pattern`: cron with seconds (6 fields), e.g. "0 *\/5 * * * *". Errors are logged, never thrown. */
  every(name: string, pattern: string, fn: () => unknown): void;
  stop(): void;
}

export function createScheduler({ log }: { log: Logger }): Scheduler {
  const jobs = new Set<Cron>();
  return {
    every(name, pattern, fn) {
      jobs.add(
        new Cron(pattern, { name, protect: true, catch: (e) => log.error({ err: e, schedule: name }, "scheduled task failed") }, async () => {
          await fn();
        }),
      );
    },
    stop() {
      for (const j of [...jobs]) j.stop();
      jobs.clear();
    },
  };
}
