/**
 * Enqueue: a job's row written in the caller's unit (outbox), or — when its type and group have a free slot
 * in this process — handed over: stored already claimed and started once that unit is durable.
 */
import { newId } from "../ids";
import { giveBackLater } from "./queue.giveback";
import { startJob } from "./queue.run";
import type { QueueState } from "./queue.state";
import type { EnqueueInput, Job } from "./queue.types";

/** What enqueue decides before it writes: the job's row, and whether it is handed over (`handOver`). */
function planJob(q: QueueState, input: EnqueueInput, inUnit: () => boolean) {
  const { now, handlers, defaultMaxAttempts, hasRoom } = q;
  const id = newId();
  const t = now().getTime();
  const runAt = input.runAt?.getTime() ?? t;
  const handler = handlers.get(input.type);
  // A job of a grouped type without a group is a group of its own: never held by another's limit, and
  // found by the scan's walk over groups like every other (ungroupedKey).
  const groupKey = input.groupKey ?? (handler?.groupConcurrency ? ungroupedKey(id) : null);
  const payload = JSON.stringify(input.payload);
  const maxAttempts = input.maxAttempts ?? handler?.maxAttempts ?? defaultMaxAttempts;
  const hold = handler?.anchor && input.groupKey !== undefined ? input.hold : undefined;
  const handedOver =
    handler?.handle && q.started && !q.stopping && runAt <= t && inUnit() && hasRoom(input.type, groupKey)
      ? handOver(q, { id, type: input.type, payload, maxAttempts, groupKey, t, hold })
      : null;
  return { id, t, runAt, groupKey, payload, maxAttempts, hold, handedOver };
}

/** After a job's row is written as pending (or its hold as due): its type or group is worth a claim then. */
function enqueued(q: QueueState, type: string, runAt: number, groupKey: string | null): void {
  const { wake } = q;
  wake(type, runAt, groupKey);
  if (q.started) q.nudge();
}

export async function enqueueJob(q: QueueState, input: EnqueueInput): Promise<string> {
  const { db, store } = q;
  const { id, t, runAt, groupKey, payload, maxAttempts, hold, handedOver } = planJob(q, input, db.inUnit);
  if (handedOver) {
    if (!handedOver.held) await store.insertClaimed(id, input.type, payload, handedOver.job.runAt, handedOver.job.leaseToken, maxAttempts, groupKey, t);
    handedOver.stored();
    return id;
  }
  if (hold) hold({ token: null, until: runAt });
  else await store.insertPending(id, input.type, payload, runAt, maxAttempts, groupKey, t);
  enqueued(q, input.type, runAt, groupKey);
  return id;
}

/**
 * Hand-over: a job enqueued (inside a transaction) while its type and group have a free slot is stored
 * already claimed by this process and started once that transaction is durable — no claim UPDATE, no
 * pump, and it runs one sync after its enqueue instead of two. If the transaction is undone the slots
 * are given back; if the process dies first, the row is a claimed job whose lease expires (or that
 * `releaseOrphans` gives back at the next start), as after any claim. Returns null when the job is not
 * handed over; else the job, whether its hold is on its anchor's row (else the caller writes its jobs row,
 * leased to the job's token) and `stored`, to call once that row is written.
 */
type HandOver = { id: string; type: string; payload: string; maxAttempts: number; groupKey: string | null; t: number; hold?: EnqueueInput["hold"] };
function handOver(q: QueueState, { id, type, payload, maxAttempts, groupKey, t, hold }: HandOver): { job: Job; held: boolean; stored: () => void } | null {
  const { db, leaseToken, leaseMs, handovers, freeSlots, takeSlots, idleUntil, heldOnRow } = q;
  const token = leaseToken();
  const job: Job = { id, type, payload: JSON.parse(payload), attempts: 1, maxAttempts, groupKey, runAt: t + leaseMs, leaseToken: token };
  let resolve!: () => void;
  const settled = new Promise<void>((r) => (resolve = r));
  const settle = () => {
    handovers.delete(settled);
    resolve();
  };
  let stored = false;
  try {
    db.afterCommit(
      () => {
        settle();
        if (stored && !q.stopping) return startJob(q, job);
        freeSlots(type, groupKey);
        // Durable while stopping: give it back now rather than after its lease expires.
        if (stored) giveBackLater(q, job);
        idleUntil.delete(type);
      },
      () => {
        settle();
        freeSlots(type, groupKey);
      },
    );
  } catch {
    return null; // not inside one of our transactions (a raw BEGIN): an ordinary pending job
  }
  handovers.add(settled);
  takeSlots(type, groupKey);
  if (hold) {
    heldOnRow.add(job);
    hold({ token, until: job.runAt });
  }
  return { job, held: !!hold, stored: () => (stored = true) };
}

/** The group of a grouped type's job enqueued without one (and of such rows an older version left: start()). */
const ungroupedKey = (id: string) => `job:${id}`;
