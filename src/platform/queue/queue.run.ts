/**
 * Running claimed jobs: their starts put in line a slice at a time, each handler run with its lease renewed,
 * and its outcome committed (queue.outcome.ts) — tried again while the lease holds — before its slots are free.
 */
import { giveBackLater } from "./queue.giveback";
import { commitOutcome } from "./queue.outcome";
import type { QueueState } from "./queue.state";
import type { Job, JobOutcome } from "./queue.types";

/**
 * Job starts wait in line and run a slice at a time (db.backgroundSlice, then the next event-loop turn): a
 * claim or a campaign batch hands over dozens of jobs at once, and each runs its handler up to its first
 * await when it starts (a sandbox send all of it) — started together they held the loop for milliseconds,
 * and every request waiting to be read with them. Returns the function that puts a start in line.
 */
export function startLine(sliceTimer: () => () => boolean): (start: () => void) => void {
  const starts: (() => void)[] = [];
  let startsScheduled = false;
  function runStarts(): void {
    startsScheduled = false;
    const spent = sliceTimer();
    let n = 0; // (a start may add starts: its handler's own hand-overs)
    while (n < starts.length) {
      starts[n++]!();
      if (spent()) break;
    }
    starts.splice(0, n);
    if (starts.length) {
      startsScheduled = true;
      setImmediate(runStarts);
    }
  }
  return (start) => {
    starts.push(start);
    if (!startsScheduled) {
      startsScheduled = true;
      setImmediate(runStarts);
    }
  };
}

/** Runs a claimed job whose slots are taken (its handler from the next start slice on). */
export function startJob(q: QueueState, job: Job): void {
  const { running, startInLine, freeSlots, idleUntil, log } = q;
  const set = running.get(job.type) ?? new Set();
  running.set(job.type, set);
  const p: Promise<void> = new Promise<void>((resolve) => {
    startInLine(() => {
      if (!q.stopping) return resolve(runJob(q, job));
      // Stopping before it started: given back now rather than after its lease expires.
      freeSlots(job.type, job.groupKey);
      giveBackLater(q, job);
      idleUntil.delete(job.type);
      resolve();
    });
  })
    .catch((e) => log.error({ err: e, jobId: job.id }, "job finalisation failed"))
    .finally(() => {
      set.delete(p);
      if (!q.stopping) q.nudge();
    });
  set.add(p);
}

async function runJob(q: QueueState, job: Job): Promise<void> {
  const { db, handlers, inflight, now, leaseMs, heldOnRow, store, log, freeSlots } = q;
  const handler = handlers.get(job.type)!;
  inflight.set(job.id, job);
  // A handler may outlive one lease (many provider calls, each bounded by a quarter of it: X's chunked
  // uploads): the lease is renewed every third of it while the handler runs, so no other worker claims
  // the job and sends it a second time meanwhile. A crashed process renews nothing: its leases expire.
  const renewal = setInterval(
    () => {
      const until = now().getTime() + leaseMs;
      const anchor = heldOnRow.has(job) ? handler.anchor! : null;
      void db
        .unit(() => (anchor ? anchor.renew(job.payload, job.leaseToken, until) : store.renewLease(until, job.id, job.leaseToken)))
        .then((changed) => {
          if (changed) job.runAt = until;
        })
        .catch((e) => log.warn({ err: e, jobId: job.id }, "job lease not renewed"));
    },
    Math.max(1000, leaseMs / 3),
  );
  // The job's slots (its type's, its group's) are free once its outcome has committed: the sync that makes
  // it durable need not hold them (the next job's claim is answered after a later sync, which covers it).
  let slotsFreed = false;
  const freeSlotsOnce = () => {
    if (slotsFreed) return;
    slotsFreed = true;
    freeSlots(job.type, job.groupKey);
    if (!q.stopping) q.nudge();
    q.slotFreed?.();
  };
  try {
    let result: { outcome: JobOutcome } | { thrown: unknown };
    try {
      result = { outcome: await handler.handle!(job) };
    } catch (e) {
      result = { thrown: e };
    }
    // The outcome is in memory only until it commits: a commit that fails (the write lock held past the
    // busy timeout by another process, a full disk) is tried again while the lease holds, instead of
    // leaving the job leased and running it a second time after the lease (a dispatch would send twice).
    for (let wait = 50; ; wait = Math.min(wait * 2, 2000)) {
      try {
        await commitOutcome(q, job, handler, result, freeSlotsOnce);
        break;
      } catch (e) {
        if (now().getTime() + wait >= job.runAt - 1000) throw e; // job.runAt = its lease expiry
        log.warn({ err: e, jobId: job.id, type: job.type, retryInMs: wait }, "job outcome not stored; trying again");
        await Bun.sleep(wait);
      }
    }
  } finally {
    q.finished++;
    clearInterval(renewal);
    inflight.delete(job.id);
    freeSlotsOnce();
  }
}
