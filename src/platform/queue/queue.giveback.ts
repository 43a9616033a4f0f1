/**
 * Giving jobs back: a job this process holds but will not run or finish (stopping) is released to run again
 * at once, its attempt not counted — a jobs row back to pending, a hold back to due on its anchor's row.
 */
import { unhold } from "./queue.anchor";
import type { QueueState } from "./queue.state";
import type { Job } from "./queue.types";

/** A job this process holds, given back to run again at once (stopping): its attempt is not counted. */
export async function giveBack(q: QueueState, job: Job): Promise<void> {
  const { heldOnRow, store, now } = q;
  if (heldOnRow.has(job))
    await unhold(q, { ...job, token: job.leaseToken }, { status: "due", runAt: now().getTime(), attempts: job.attempts - 1, error: null });
  else await store.release(now().getTime(), job.id, job.leaseToken);
}

/** Gives-back started outside a unit (a job that became durable, or was to start, while stopping): stop() waits for them. */
export function giveBackLater(q: QueueState, job: Job): void {
  const { db, log, givingBack } = q;
  const p: Promise<void> = db
    .unit(() => giveBack(q, job))
    .catch((e) => log.warn({ err: e, jobId: job.id }, "job not given back (it runs again when its lease expires)"))
    .finally(() => givingBack.delete(p));
  givingBack.add(p);
}
