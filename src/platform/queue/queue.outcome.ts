/**
 * A job's outcome, finalised: a failed attempt retried after its backoff or dead after its last, and the
 * outcome applied to the job's row (or its hold) only while the job still holds its lease — in the database's
 * group commit, with the handler's `writes`.
 */
import { unhold } from "./queue.anchor";
import { defaultBackoffMs } from "./queue.backoff";
import type { QueueState } from "./queue.state";
import type { Job, JobHandler, JobOutcome } from "./queue.types";

/** An attempt that threw, logged: dead after the job's last attempt (retryAt null), else retried after its backoff. */
export function failedAttempt(q: QueueState, job: Job, handler: JobHandler, thrown: unknown, t: number): { error: string; retryAt: number | null } {
  const { log } = q;
  const error = thrown instanceof Error ? thrown.message : String(thrown);
  if (job.attempts >= job.maxAttempts) {
    log.error({ jobId: job.id, type: job.type, attempts: job.attempts, err: error }, "job dead");
    return { error, retryAt: null };
  }
  const delay = (handler.backoffMs ?? defaultBackoffMs)(job.attempts);
  log.warn({ jobId: job.id, type: job.type, attempts: job.attempts, err: error, retryInMs: delay }, "job failed; will retry");
  return { error, retryAt: t + delay };
}

/** Applies an outcome (or a thrown error) to the job's row, only while the job still holds its lease. */
async function finalise(q: QueueState, job: Job, handler: JobHandler, result: { outcome: JobOutcome } | { thrown: unknown }): Promise<void> {
  const { heldOnRow, store, now, wake } = q;
  if (heldOnRow.has(job)) return finaliseHeld(q, job, handler, result);
  if ("thrown" in result) {
    const t = now().getTime();
    const { error, retryAt } = failedAttempt(q, job, handler, result.thrown, t);
    if (retryAt === null) await store.markDead(error, t, job.id, job.leaseToken);
    else {
      await store.reschedule(retryAt, error, 0, t, null, job.id, job.leaseToken);
      wake(job.type, retryAt, job.groupKey);
    }
    return;
  }
  const outcome = result.outcome;
  if (!outcome) await store.deleteDone(job.id, job.leaseToken);
  else if ("dead" in outcome) await store.markDead(outcome.dead, now().getTime(), job.id, job.leaseToken);
  else if ("writes" in outcome) throw new Error("a writes() outcome must return a final outcome");
  else {
    await store.reschedule(
      outcome.retryAt.getTime(),
      outcome.error ?? null,
      outcome.countAttempt === false ? 1 : 0,
      now().getTime(),
      outcome.payload ? JSON.stringify(outcome.payload) : null,
      job.id,
      job.leaseToken,
    );
    wake(job.type, outcome.retryAt.getTime(), job.groupKey);
  }
}

/** finalise for a held job: success writes nothing (the handler's writes took the row out of its anchor). */
async function finaliseHeld(q: QueueState, job: Job, handler: JobHandler, result: { outcome: JobOutcome } | { thrown: unknown }): Promise<void> {
  const { now } = q;
  const t = now().getTime();
  const row = { ...job, token: job.leaseToken };
  if ("thrown" in result) {
    const { error, retryAt } = failedAttempt(q, job, handler, result.thrown, t);
    await unhold(q, row, { status: retryAt === null ? "dead" : "pending", runAt: retryAt ?? t, attempts: job.attempts, error });
    return;
  }
  const outcome = result.outcome;
  if (!outcome) return;
  if ("dead" in outcome) await unhold(q, row, { status: "dead", runAt: t, attempts: job.attempts, error: outcome.dead });
  else if ("writes" in outcome) throw new Error("a writes() outcome must return a final outcome");
  else {
    // An attempt not counted, with the same payload, waits on its row again (a throttled send); any other
    // retry has a count or a payload to keep: a jobs row.
    const uncounted = outcome.countAttempt === false && !outcome.payload;
    await unhold(q, row, {
      status: uncounted ? "due" : "pending",
      runAt: outcome.retryAt.getTime(),
      attempts: job.attempts - (outcome.countAttempt === false ? 1 : 0),
      error: outcome.error ?? null,
      payload: outcome.payload,
    });
  }
}

/** Thrown by a job's writes run without a savepoint of their own: the unit is to run again with them (isolated). */
export class Isolate extends Error {}

/**
 * A unit that runs jobs' writes (`body(isolated)`), each in a savepoint of its own when `isolated`, so a throw rolls
 * back that job's writes alone and counts as its failed attempt. On SQLite always (its units share group commits).
 * Where units are transactions of their own (PostgreSQL) first without savepoints (two statements fewer a job, each
 * a round trip): a job's throw becomes Isolate, which rolls the unit back whole, and it runs again isolated.
 */
export async function withIsolation<T>(
  q: QueueState,
  body: (isolated: boolean) => Promise<T>,
  options: { onCommit: () => void; background: true; shared?: boolean },
): Promise<T> {
  const { db } = q;
  if (!db.concurrentUnits) return db.unit(() => body(true), options);
  try {
    return await db.unit(() => body(false), options);
  } catch (e) {
    if (!(e instanceof Isolate)) throw e;
    return db.unit(() => body(true), options);
  }
}

/** A job's writes (`run`), in a savepoint of their own when `isolated`; without, a throw is Isolate (withIsolation). */
export async function runWrites<T>(q: QueueState, run: () => Promise<T>, isolated: boolean): Promise<T> {
  if (isolated) return q.db.unit(run);
  try {
    return await run();
  } catch (e) {
    throw new Isolate("a job's writes threw: run again with savepoints", { cause: e });
  }
}

/**
 * Every finalisation (the handler's `writes`, then the job row's delete/reschedule/dead) goes through
 * the database's group commit: the jobs that finish in one event-loop turn share one transaction and
 * one fsync (PostgreSQL: with JobOptions.shareable, a shared unit). `writes` runs isolated (withIsolation): a
 * throw rolls back its writes alone and counts as a failed attempt. If the shared COMMIT fails, the jobs keep
 * their leases and are reclaimed when they expire.
 */
export function commitOutcome(
  q: QueueState,
  job: Job,
  handler: JobHandler,
  result: { outcome: JobOutcome } | { thrown: unknown },
  onCommit: () => void,
): Promise<void> {
  // Shared (PostgreSQL: db.unit) when the type says its jobs may be (JobOptions.shareable).
  const options = { onCommit, background: true, shared: handler.shareable } as const;
  const writes = "outcome" in result && result.outcome && "writes" in result.outcome ? result.outcome.writes : null;
  if (!writes) return q.db.unit(() => finalise(q, job, handler, result), options);
  return withIsolation(
    q,
    async (isolated) => {
      let final: { outcome: JobOutcome } | { thrown: unknown };
      try {
        final = { outcome: await runWrites(q, async () => writes(), isolated) };
      } catch (e) {
        if (e instanceof Isolate) throw e;
        final = { thrown: e };
      }
      await finalise(q, job, handler, final);
    },
    options,
  );
}
