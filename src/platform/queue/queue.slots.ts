/**
 * Worker slots: how many jobs of each type, and of each group of a grouped type, this process may run at once.
 */
import type { JobHandler } from "./queue.types";

/** Inline jobs run per type and pump, at most: bounds the time one group commit holds the loop. */
const INLINE_BATCH = 256;

/**
 * The worker slots of each type (its concurrency) and of each group (groupConcurrency): taken by a claim or a
 * hand-over, given back once the job's outcome has committed (or its claim did not). In memory: a process
 * counts only its own jobs.
 */
export function workerSlots({
  handlers,
  workers,
  onGroupFreed,
}: {
  handlers: Map<string, JobHandler>;
  workers: number;
  onGroupFreed: (type: string, group: string) => void;
}) {
  const busy = new Map<string, number>(); // per type: jobs holding a slot (started, outcome not committed yet)
  const runningPerGroup = new Map<string, number>(); // `${type}\u0000${groupKey}` -> running jobs (groupConcurrency types only)
  const groupId = (type: string, group: string) => `${type}\u0000${group}`;

  /** Jobs of `type` this process may start now. */
  function capacity(type: string): number {
    if (handlers.get(type)?.inline) return INLINE_BATCH;
    const limit = handlers.get(type)?.concurrency ?? workers;
    return limit - (busy.get(type) ?? 0);
  }
  /** Jobs of `type` in `group` that hold a slot now. */
  const runningIn = (type: string, group: string): number => runningPerGroup.get(groupId(type, group)) ?? 0;
  return {
    capacity,
    runningIn,
    hasRoom(type: string, groupKey: string | null): boolean {
      const perGroup = handlers.get(type)?.groupConcurrency;
      return capacity(type) > 0 && (!perGroup || groupKey === null || runningIn(type, groupKey) < perGroup);
    },
    /** Takes a slot of the job's type and group (a claim, a hand-over); `free` gives it back. */
    take(type: string, groupKey: string | null): void {
      busy.set(type, (busy.get(type) ?? 0) + 1);
      if (groupKey !== null && handlers.get(type)?.groupConcurrency) {
        const k = groupId(type, groupKey);
        runningPerGroup.set(k, (runningPerGroup.get(k) ?? 0) + 1);
      }
    },
    /** Gives the slots back; the group's next jobs are worth a claim now (onGroupFreed). */
    free(type: string, groupKey: string | null): void {
      busy.set(type, (busy.get(type) ?? 1) - 1);
      if (groupKey !== null && handlers.get(type)?.groupConcurrency) {
        const k = groupId(type, groupKey);
        const n = (runningPerGroup.get(k) ?? 1) - 1;
        if (n > 0) runningPerGroup.set(k, n);
        else runningPerGroup.delete(k);
        onGroupFreed(type, groupKey);
      }
    },
  };
}

export type WorkerSlots = ReturnType<typeof workerSlots>;
