/**
 * The job loop: a pump claims what each type has room for (queue.claim.ts) or runs its inline jobs
 * (queue.inline.ts) in one group-commit item, and starts the claimed jobs (queue.run.ts); it comes back on a
 * nudge (an enqueue, a finished job), on the claim hints' next due time, or every `pollMs`. drain() runs it
 * until nothing is due and nothing runs.
 */
import { sweepHolds } from "./queue.anchor";
import { claim } from "./queue.claim";
import { giveBackLater } from "./queue.giveback";
import { continueInline, runInline } from "./queue.inline";
import { withIsolation } from "./queue.outcome";
import { startJob } from "./queue.run";
import type { QueueState } from "./queue.state";
import type { Job } from "./queue.types";

/**
 * Passes whose claims are not started yet. NB! Between a claim's commit and its jobs entering `running`
 * lies the group commit's sync: a drain that looked only at `running` then saw nothing to wait for while
 * another pass (the timer's) held claimed jobs, and returned early.
 */
function pumpOnce(q: QueueState, full = false): Promise<number> {
  const { passes } = q;
  const p = claimAndStart(q, full).finally(() => passes.delete(p));
  passes.add(p);
  return p;
}

/**
 * Claims what each type has room for and starts it; returns how many jobs were started. The claims of
 * all types are one group-commit item: under load they share the fsync of the requests' writes instead
 * of costing one of their own (a lost claim after a crash only means the job is claimed again).
 */
async function claimAndStart(q: QueueState, full: boolean): Promise<number> {
  const { now, pollMs, groupDueAt, markFreed, idleUntil, handlers, freed, capacity, freeSlots } = q;
  const t = now().getTime();
  if (performance.now() >= q.nextFullPass) {
    full = true;
    q.nextFullPass = performance.now() + pollMs;
  }
  for (const [type, due] of groupDueAt)
    for (const [group, at] of due)
      if (at <= t) {
        due.delete(group);
        markFreed(type, group);
      }
  const idle = (type: string) => (idleUntil.get(type) ?? -Infinity) > t;
  const wanted = [...handlers.keys()]
    .filter((type) => full || !idle(type) || freed.has(type))
    .map((type) => [type, capacity(type)] as const)
    .filter(([, room]) => room > 0);
  if (!wanted.length) return 0;
  // (A group-commit item may run twice: counted inside it, from zero each time.)
  const { claimed, inline } = await withIsolation(
    q,
    async (isolated) => {
      let ran = 0;
      const jobs: Job[][] = [];
      for (const [type, room] of wanted) {
        if (full) await sweepHolds(q, type, t, false);
        if (!handlers.get(type)!.inline) jobs.push(await claim(q, type, room, full || !idle(type)));
        else ran += await runInline(q, type, handlers.get(type)!, room, full, isolated);
      }
      return { claimed: jobs, inline: ran };
    },
    { onCommit: () => continueInline(q), background: true },
  );
  let startedJobs = inline;
  for (const batch of claimed) {
    for (const job of batch) {
      if (q.stopping) {
        // Claimed while stopping: give the job back now rather than after its lease expires.
        freeSlots(job.type, job.groupKey);
        giveBackLater(q, job);
        idleUntil.delete(job.type);
        continue;
      }
      startJob(q, job);
      startedJobs++;
    }
  }
  return startedJobs;
}

async function pump(q: QueueState): Promise<void> {
  const { log } = q;
  if (q.stopping || !q.started) return;
  if (q.pumping) {
    q.pumpAgain = true;
    return;
  }
  q.pumping = true;
  try {
    do {
      q.pumpAgain = false;
      await pumpOnce(q);
    } while (q.pumpAgain && !q.stopping);
  } catch (e) {
    log.error({ err: e }, "job loop error");
  } finally {
    q.pumping = false;
  }
  schedule(q);
}

function schedule(q: QueueState): void {
  const { now, pollMs, handlers, capacity, idleUntil, groupDueAt, db } = q;
  if (q.timer) clearTimeout(q.timer);
  if (q.stopping || !q.started) return;
  // From the claim hints, without a query: a type with room and no hint was claimed in full (more may
  // be due now); a type without room is woken by its running jobs as they finish.
  const t = now().getTime();
  let next = t + pollMs;
  for (const type of handlers.keys()) if (capacity(type) > 0) next = Math.min(next, idleUntil.get(type) ?? t);
  for (const due of groupDueAt.values()) for (const at of due.values()) next = Math.min(next, at);
  q.timer = setTimeout(() => void db.outside(() => pump(q)), Math.max(0, next - t));
}

export function nudge(q: QueueState): void {
  const { db } = q;
  if (!q.started || q.stopping) return;
  // NB! The next macrotask, not a microtask: nudges come from inside units of work (an enqueue), and a
  // group commit's items await their stores — a microtask would run the pump between them, inside the
  // open transaction, as if it were part of the unit (db.unit). A group ends within its macrotask.
  // NB! And outside the unit's chain: on PostgreSQL an immediate inherits it (db.outside).
  setImmediate(() => void db.outside(() => pump(q)));
}

/**
 * Runs jobs until none is due and none runs. Like the job loop, it claims by the hints after a first full
 * pass (a full pass, a claim of every type, after each finished job made a drain's claims its largest
 * cost), and it ends only after a full pass found nothing.
 */
export async function drain(q: QueueState, { timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<number> {
  const { running, passes, handovers, continued } = q;
  const deadline = Date.now() + timeoutMs;
  let total = 0;
  let full = true;
  for (;;) {
    // NB! A job that finished while this pass claimed (its slot freed after the pass looked) leaves
    // nothing running and its group's next job unclaimed: then the drain looks again.
    const finishedBefore = q.finished;
    const n = await pumpOnce(q, full);
    total += n;
    // (Another pass failing is its pump's to log: here it only means "look again".)
    const all: Promise<unknown>[] = [
      ...[...running.values()].flatMap((s) => [...s]),
      ...[...passes].map((p) => p.catch(() => 0)),
      ...handovers,
      ...continued.values(),
    ];
    if (n === 0 && all.length === 0 && q.finished === finishedBefore) {
      if (full) return total;
      full = true;
      continue;
    }
    full = false;
    if (Date.now() > deadline) throw new Error("queue drain timed out");
    if (all.length) await Promise.race([...all, new Promise<void>((resolve) => (q.slotFreed = resolve))]);
    q.slotFreed = null;
  }
}
