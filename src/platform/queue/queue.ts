/**
 * The durable job loop (DESIGN §7). Delivery policy lives here — claiming, leases, retries with
 * exponential backoff and jitter, dead jobs — and knows nothing about what a job does.
 *
 * - `enqueueJob` inserts a row; call it inside the business unit (db.unit, outbox): the job exists iff the change does.
 * - Each job type has its own handler and its own concurrency, so a slow webhook receiver never starves
 *   message dispatch.
 * - A claim sets `lease_until` (and `run_at`, to the same time: expired leases are then found by the index
 *   that finds due jobs), a fresh `lease_token` and `attempts + 1` in one UPDATE … RETURNING;
 *   finalising (delete / reschedule / dead) happens only `WHERE lease_token = ?`, so a worker whose lease
 *   expired (and whose job was reclaimed) cannot overwrite the new owner's result.
 * - After a crash, `running` rows whose lease expired are claimable again: at-least-once; handlers are
 *   idempotent (keyed by the business id).
 * - A type may keep its jobs on the business rows they are about instead (JobAnchor: a queued message is
 *   its own dispatch job until its first attempt ends), with the same claims, leases and fences.
 *
 * The contract's types are in queue.types.ts; every statement on the jobs table is in queue.store.ts. The
 * loop's state is one object (queue.state.ts) built here and handed explicitly to the files of its parts:
 * enqueue and hand-over (queue.enqueue.ts), claims (queue.claim.ts), the anchor's holds (queue.anchor.ts),
 * inline jobs (queue.inline.ts), running a job (queue.run.ts), its outcome (queue.outcome.ts), giving jobs
 * back (queue.giveback.ts), the pump and drain (queue.pump.ts), with the claim hints (queue.hints.ts) and the
 * worker slots (queue.slots.ts).
 */
import type { Db } from "../../db/client";
import { randomToken } from "../ids";
import type { Logger } from "../logger";
import { sweepHolds } from "./queue.anchor";
import { nextDueOf } from "./queue.claim";
import { enqueueJob } from "./queue.enqueue";
import { giveBack } from "./queue.giveback";
import { claimHints } from "./queue.hints";
import { drain, nudge } from "./queue.pump";
import { startLine } from "./queue.run";
import { workerSlots } from "./queue.slots";
import type { QueueState } from "./queue.state";
import { createQueueStore } from "./queue.store";
import type { JobHandler, Queue, UntypedJobs } from "./queue.types";

export type { EnqueueInput, Job, JobAnchor, JobHandler, JobOutcome, JobRow, Queue } from "./queue.types";

export function createQueue<M = UntypedJobs>({
  db,
  now,
  log,
  workers,
  maxAttempts: defaultMaxAttempts,
  leaseMs,
  pollMs = 500,
}: {
  db: Db;
  now: () => Date;
  log: Logger;
  workers: number;
  maxAttempts: number;
  leaseMs: number;
  pollMs?: number;
}): Queue<M> {
  const handlers = new Map<string, JobHandler>();
  // Lease tokens fence a claim against a later one (after its lease expired, maybe by another process): they
  // need to be unique, not secret. A random prefix per queue and a counter (a random token per hand-over was
  // ~2 % of the CPU under POST /messages load).
  const tokenPrefix = `${randomToken()}.`;
  let tokenSeq = 0;
  const leaseToken = () => tokenPrefix + (++tokenSeq).toString(36);
  const { idleUntil, freed, markFreed, groupDueAt, wake } = claimHints(handlers);
  const { capacity, hasRoom, take: takeSlots, free: freeSlots, runningIn } = workerSlots({ handlers, workers, onGroupFreed: markFreed });
  /** From now: whether the current background slice (db.backgroundSlice) is spent. */
  const sliceTimer = () => {
    const end = performance.now() + db.backgroundSlice();
    return () => performance.now() > end;
  };
  const q: QueueState = {
    db,
    now,
    log,
    workers,
    defaultMaxAttempts,
    leaseMs,
    pollMs,
    store: createQueueStore(db),
    handlers,
    running: new Map(),
    inflight: new Map(),
    leaseToken,
    started: false,
    stopping: false,
    idleUntil,
    freed,
    markFreed,
    groupDueAt,
    wake,
    nextFullPass: 0,
    capacity,
    hasRoom,
    takeSlots,
    freeSlots,
    runningIn,
    handovers: new Set(),
    heldOnRow: new WeakSet(),
    givingBack: new Set(),
    cutShort: new Set(),
    continued: new Map(),
    passes: new Set(),
    finished: 0,
    slotFreed: null,
    sliceTimer,
    startInLine: startLine(sliceTimer),
    timer: null,
    pumping: false,
    pumpAgain: false,
    nudge: () => nudge(q),
  };
  const { store, running, inflight, handovers, continued, givingBack } = q;

  /** After `jobs retry`: the job is pending again, due now. */
  function retried(done: boolean): boolean {
    if (done) {
      idleUntil.clear();
      q.nudge();
    }
    return done;
  }

  return {
    enqueueJob: (input) => enqueueJob(q, input),
    cancelJob: (id) => store.cancelPending(id),
    register(type, handler) {
      if (!handler.handle === !handler.inline) throw new Error(`job type ${type}: give exactly one of handle and inline`);
      if (handler.anchor && !(handler.handle && handler.groupConcurrency)) throw new Error(`job type ${type}: an anchor needs handle and groupConcurrency`);
      handlers.set(type, handler as JobHandler);
    },
    start() {
      // Rows of grouped types without a group (an older version enqueued them so) get one of their own:
      // the claim's scan finds groups, not rows. Once per start; a no-op when there are none. Its unit is
      // queued before the first pump's claims (nudge: the next macrotask), so it commits before or with them.
      void db
        .unit(async () => {
          for (const [type, h] of handlers) if (h.groupConcurrency) await store.groupUngrouped(type);
        })
        .catch((e) => log.error({ err: e }, "jobs without a group not grouped"));
      q.started = true;
      q.stopping = false;
      q.nudge();
    },
    async stop(timeoutMs = 10_000) {
      q.stopping = true;
      if (q.timer) clearTimeout(q.timer);
      const all = [...[...running.values()].flatMap((s) => [...s]), ...handovers, ...continued.values()];
      await Promise.race([Promise.allSettled(all), Bun.sleep(timeoutMs)]);
      // Whatever is still running gets its lease released so the next start picks it up at once.
      // (A lease renewed meanwhile keeps its token: the job's own is still the one to release with.)
      await db.join(async () => {
        for (const job of inflight.values()) await giveBack(q, job);
      });
      await Promise.allSettled([...givingBack]);
      q.started = false;
    },
    nudge: q.nudge,
    async releaseOrphans() {
      idleUntil.clear();
      freed.clear();
      groupDueAt.clear();
      const t = now().getTime();
      let n = await store.releaseAllRunning(t);
      await db.unit(async () => {
        for (const type of handlers.keys()) n += await sweepHolds(q, type, Number.MAX_SAFE_INTEGER, true);
      });
      return n;
    },
    drain: (options) => drain(q, options),
    listJobs({ dead, type, limit = 100 }) {
      return store.list(dead ? "dead" : null, type ?? null, limit);
    },
    async retryJob(id) {
      return retried(await store.retryDead(id, now().getTime()));
    },
    async stats() {
      const rows = await store.countsByTypeAndStatus();
      const out: Record<string, { pending: number; running: number; dead: number }> = {};
      for (const r of rows) {
        out[r.type] ??= { pending: 0, running: 0, dead: 0 };
        (out[r.type] as Record<string, number>)[r.status] = r.n;
      }
      for (const [type, h] of handlers) {
        const on = await h.anchor?.count();
        if (!on || on.pending + on.running === 0) continue;
        const counts = (out[type] ??= { pending: 0, running: 0, dead: 0 });
        counts.pending += on.pending;
        counts.running += on.running;
      }
      return out;
    },
    async oldestDueAgeMs() {
      const t = now().getTime();
      const out: Record<string, number> = {};
      for (const type of handlers.keys()) {
        const at = await nextDueOf(q, type);
        if (at !== null && at <= t) out[type] = t - at;
      }
      return out;
    },
  };
}
