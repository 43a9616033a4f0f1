/**
 * Inline jobs (database only, no I/O): run inside the transaction that takes them, a background slice at a
 * time, and — cut short by the slice — continued in the next group as soon as this one has committed.
 */
import { nextDueOf } from "./queue.claim";
import { failedAttempt, Isolate, runWrites, withIsolation } from "./queue.outcome";
import type { QueueState } from "./queue.state";
import type { Job, JobHandler, JobOutcome } from "./queue.types";

/**
 * Runs the due jobs of an inline type (at most `limit`) inside the current transaction; returns how many.
 * Cut short by the group's background slice, it goes on in the next group (continueInline).
 *
 * `isolated`: each job in a savepoint of its own, so a throw rolls back its writes alone and counts as its
 * failed attempt; without, a throw rolls back the caller's whole unit, for it to run again isolated (withIsolation).
 */
export async function runInline(q: QueueState, type: string, handler: JobHandler, limit: number, full: boolean, isolated = true): Promise<number> {
  const { store, now, sliceTimer, cutShort, wake, idleUntil } = q;
  const t = now().getTime();
  if (full) await store.requeueExpiredInline(t, type);
  const rows = await store.dueInline(type, t, limit);
  // A group's background slice bounds the run too (db.unit's background items).
  const spent = sliceTimer();
  const done: string[] = []; // removed together once the run ends
  const runJob = async (r: (typeof rows)[number]) => {
    const job: Job = {
      id: r.id,
      type,
      payload: JSON.parse(r.payload),
      attempts: r.attempts + 1,
      maxAttempts: r.max_attempts,
      groupKey: r.group_key,
      runAt: r.run_at,
      leaseToken: "",
    };
    const run = async () => {
      const o = await handler.inline!(job);
      if (o && "writes" in o) throw new Error("an inline job returns its final outcome, not writes()");
      return o;
    };
    let outcome: JobOutcome;
    try {
      outcome = await runWrites(q, run, isolated);
    } catch (e) {
      if (e instanceof Isolate) throw e;
      const { error, retryAt } = failedAttempt(q, job, handler, e, t);
      if (retryAt === null) await store.markInlineDead(error, t, job.id);
      else {
        await store.rescheduleInline(retryAt, error, 1, t, null, job.id);
        wake(type, retryAt, job.groupKey);
      }
      return;
    }
    if (!outcome) done.push(job.id);
    else if ("dead" in outcome) await store.markInlineDead(outcome.dead, t, job.id);
    else {
      const payload = outcome.payload ? JSON.stringify(outcome.payload) : null;
      await store.rescheduleInline(outcome.retryAt.getTime(), outcome.error ?? null, outcome.countAttempt === false ? 0 : 1, t, payload, job.id);
      wake(type, outcome.retryAt.getTime(), job.groupKey);
    }
  };
  let ran = 0;
  if (!isolated && handler.shareable) {
    // Side by side (PostgreSQL, no savepoints: the unit is a transaction of its own): their statements pipelined
    // on its connection, a round trip for all where one after another took one each. The type says its jobs
    // take no lock to keep each other out (JobOptions.shareable). A throw (Isolate) once all have settled.
    ran = rows.length;
    const settled = await Promise.allSettled(rows.map(runJob));
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
  } else
    for (const r of rows) {
      if (ran > 0 && spent()) {
        cutShort.add(type);
        break;
      }
      ran++;
      await runJob(r);
    }
  if (done.length) await store.deleteInline(done);
  if (rows.length < limit) idleUntil.set(type, (await nextDueOf(q, type)) ?? Infinity);
  return ran;
}

/**
 * Inline types whose run the slice cut short: they go on in the next group as soon as this one has
 * committed, not after its sync and the next claim pass (which left the sandbox's reports far behind a
 * campaign's sends).
 */
export function continueInline(q: QueueState): void {
  const { log, handlers, capacity, cutShort, continued } = q;
  for (const type of cutShort) {
    cutShort.delete(type);
    if (continued.has(type) || q.stopping) continue;
    const ended = () => continued.get(type) === run && continued.delete(type);
    const run: Promise<unknown> = withIsolation(q, (isolated) => runInline(q, type, handlers.get(type)!, Math.max(1, capacity(type)), false, isolated), {
      onCommit: () => {
        ended();
        continueInline(q);
      },
      background: true,
    }).catch((e) => {
      ended();
      log.error({ err: e, type }, "inline jobs failed");
    });
    continued.set(type, run);
  }
}
