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
 * The contract's types are in queue.types.ts; every statement on the jobs table is in queue.store.ts.
 */
import type { Db } from "../../db/client";
import { newId, randomToken } from "../ids";
import type { Logger } from "../logger";
import { createQueueStore, type ClaimedJobRow } from "./queue.store";
import type { EnqueueInput, Job, JobHandler, JobOutcome, Queue, UntypedJobs } from "./queue.types";

export type { EnqueueInput, Job, JobAnchor, JobHandler, JobOutcome, JobRow, Queue } from "./queue.types";

/** Inline jobs run per type and pump, at most: bounds the time one group commit holds the loop. */
const INLINE_BATCH = 256;

export function defaultBackoffMs(attempts: number): number {
  const base = Math.min(1000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

const toJob = (r: ClaimedJobRow): Job => ({
  id: r.id,
  type: r.type,
  payload: JSON.parse(r.payload),
  attempts: r.attempts,
  maxAttempts: r.max_attempts,
  groupKey: r.group_key,
  runAt: r.run_at,
  leaseToken: r.lease_token,
});

/**
 * Job starts wait in line and run a slice at a time (db.backgroundSlice, then the next event-loop turn): a
 * claim or a campaign batch hands over dozens of jobs at once, and each runs its handler up to its first
 * await when it starts (a sandbox send all of it) — started together they held the loop for milliseconds,
 * and every request waiting to be read with them. Returns the function that puts a start in line.
 */
function startLine(sliceTimer: () => () => boolean): (start: () => void) => void {
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

/**
 * The worker slots of each type (its concurrency) and of each group (groupConcurrency): taken by a claim or a
 * hand-over, given back once the job's outcome has committed (or its claim did not). In memory: a process
 * counts only its own jobs.
 */
function workerSlots({
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
  const store = createQueueStore(db);
  const handlers = new Map<string, JobHandler>();
  const running = new Map<string, Set<Promise<void>>>(); // per type
  const inflight = new Map<string, Job>(); // started, not finished (stop gives back what is left)
  // Lease tokens fence a claim against a later one (after its lease expired, maybe by another process): they
  // need to be unique, not secret. A random prefix per queue and a counter (a random token per hand-over was
  // ~2 % of the CPU under POST /messages load).
  const tokenPrefix = `${randomToken()}.`;
  let tokenSeq = 0;
  const leaseToken = () => tokenPrefix + (++tokenSeq).toString(36);
  let started = false;
  let stopping = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let pumping = false;
  let pumpAgain = false;
  /**
   * Claim hints. A type whose claim came back with less than it had room for has nothing due before its
   * earliest pending run_at, read then (`idleUntil`); pumps skip its claim until that time or until this
   * process enqueues, reschedules or releases a job of that type. A full pass (every type) still runs at
   * least every `pollMs`, for jobs written by other processes (`jobs retry`) and leases that expired.
   * Under load this turns ~a dozen claim statements per pump into the one or two of the busy types.
   */
  const idleUntil = new Map<string, number>();
  /**
   * Groups (of types with a per-group limit) where a job finished since the last claim. A type whose due
   * jobs all sit in full groups is idle until a group frees a slot: then only that group's next jobs are
   * looked up (jobs_group_idx), never the backlog of the full groups ahead of them again (that scan was
   * O(backlog) per pump: a 100,000-delivery backlog to one slow endpoint took the loop's whole CPU).
   */
  const freed = new Map<string, Set<string>>();
  const markFreed = (type: string, group: string) => {
    let groups = freed.get(type);
    if (!groups) freed.set(type, (groups = new Set()));
    groups.add(group);
  };
  /** …and groups with a job enqueued or rescheduled there, by when it is due (type → group → run_at). */
  const groupDueAt = new Map<string, Map<string, number>>();
  let nextFullPass = 0;
  /** A job of `type` (in `group`) is due at `at`: its type, or only its group, is worth a claim then. */
  const wake = (type: string, at: number, group?: string | null) => {
    if (group != null && handlers.get(type)?.groupConcurrency) {
      let due = groupDueAt.get(type);
      if (!due) groupDueAt.set(type, (due = new Map()));
      const cur = due.get(group);
      if (cur === undefined || at < cur) due.set(group, at);
      return;
    }
    const hint = idleUntil.get(type);
    if (hint !== undefined && at < hint) idleUntil.set(type, at);
  };
  const { capacity, hasRoom, take: takeSlots, free: freeSlots, runningIn } = workerSlots({ handlers, workers, onGroupFreed: markFreed });

  /** What enqueue decides before it writes: the job's row, and whether it is handed over (`handOver`). */
  function planJob(input: EnqueueInput, inUnit: () => boolean) {
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
      handler?.handle && started && !stopping && runAt <= t && inUnit() && hasRoom(input.type, groupKey)
        ? handOver({ id, type: input.type, payload, maxAttempts, groupKey, t, hold })
        : null;
    return { id, t, runAt, groupKey, payload, maxAttempts, hold, handedOver };
  }

  /** After a job's row is written as pending (or its hold as due): its type or group is worth a claim then. */
  function enqueued(type: string, runAt: number, groupKey: string | null): void {
    wake(type, runAt, groupKey);
    if (started) nudge();
  }

  async function enqueueJob(input: EnqueueInput): Promise<string> {
    const { id, t, runAt, groupKey, payload, maxAttempts, hold, handedOver } = planJob(input, db.inUnit);
    if (handedOver) {
      if (!handedOver.held) await store.insertClaimed(id, input.type, payload, handedOver.job.runAt, handedOver.job.leaseToken, maxAttempts, groupKey, t);
      handedOver.stored();
      return id;
    }
    if (hold) hold({ token: null, until: runAt });
    else await store.insertPending(id, input.type, payload, runAt, maxAttempts, groupKey, t);
    enqueued(input.type, runAt, groupKey);
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
  const handovers = new Set<Promise<void>>(); // not started yet: drain() waits for them too
  const heldOnRow = new WeakSet<Job>(); // running jobs whose hold is on their anchor's row, not in a jobs row
  function handOver({ id, type, payload, maxAttempts, groupKey, t, hold }: HandOver): { job: Job; held: boolean; stored: () => void } | null {
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
          if (stored && !stopping) return startJob(job);
          freeSlots(type, groupKey);
          // Durable while stopping: give it back now rather than after its lease expires.
          if (stored) giveBackLater(job);
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

  /**
   * A held job leaves its hold, only while `token` still holds the row (false, nothing written, when it does
   * not: another process took it over, or the row left its anchor and there is nothing left to run): `due`
   * waits on its row again (an attempt not counted), `pending` and `dead` become a jobs row.
   */
  async function unhold(
    r: { id: string; type: string; payload: Record<string, unknown>; token: string; groupKey: string | null; maxAttempts: number },
    to: { status: "due" | "pending" | "dead"; runAt: number; attempts: number; error: string | null; payload?: Record<string, unknown> },
  ): Promise<boolean> {
    const anchor = handlers.get(r.type)!.anchor!;
    if (!(await anchor.release(r.payload, r.token, to.status === "due" ? to.runAt : null))) return false;
    if (to.status !== "due")
      await store.insertUnheld(
        r.id,
        r.type,
        JSON.stringify(to.payload ?? r.payload),
        to.status,
        to.runAt,
        to.attempts,
        r.maxAttempts,
        r.groupKey,
        to.error,
        now().getTime(),
      );
    if (to.status !== "dead") wake(r.type, to.runAt, r.groupKey);
    return true;
  }

  /** A job this process holds, given back to run again at once (stopping): its attempt is not counted. */
  async function giveBack(job: Job): Promise<void> {
    if (heldOnRow.has(job)) await unhold({ ...job, token: job.leaseToken }, { status: "due", runAt: now().getTime(), attempts: job.attempts - 1, error: null });
    else await store.release(now().getTime(), job.id, job.leaseToken);
  }

  /** Gives-back started outside a unit (a job that became durable, or was to start, while stopping): stop() waits for them. */
  const givingBack = new Set<Promise<void>>();
  function giveBackLater(job: Job): void {
    const p: Promise<void> = db
      .unit(() => giveBack(job))
      .catch((e) => log.warn({ err: e, jobId: job.id }, "job not given back (it runs again when its lease expires)"))
      .finally(() => givingBack.delete(p));
    givingBack.add(p);
  }

  /** The group of a grouped type's job enqueued without one (and of such rows an older version left: start()). */
  const ungroupedKey = (id: string) => `job:${id}`;

  /** The groups of a grouped type with due jobs, oldest first: in jobs rows and on its anchor's rows. */
  async function dueGroups(type: string, t: number): Promise<string[]> {
    const first = new Map<string, number>();
    for (const g of await store.pendingGroups(type)) first.set(g.group_key, g.first);
    for (const g of (await handlers.get(type)!.anchor?.groups()) ?? [])
      if (g.first !== null) first.set(g.groupKey, Math.min(g.first, first.get(g.groupKey) ?? Infinity));
    return [...first]
      .filter(([, at]) => at <= t)
      .sort((a, b) => a[1] - b[1])
      .map(([g]) => g);
  }

  /** When a type's next job is due (its jobs rows and its anchor's rows not held), or null. */
  async function nextDueOf(type: string): Promise<number | null> {
    let due = (await store.nextDueOfType(type)) ?? Infinity;
    for (const g of (await handlers.get(type)!.anchor?.groups()) ?? []) if (g.first !== null) due = Math.min(due, g.first);
    return due === Infinity ? null : due;
  }

  /**
   * Claim for a type with a per-group limit: the due jobs of groups that still have room, at most their room
   * each — first the groups that freed a slot, then (scan) every group with due jobs, oldest first. A group's
   * jobs rows come before its anchor's rows. One transaction, so the picks and the UPDATE see the same rows.
   */
  async function claimGrouped(type: string, limit: number, perGroup: number, t: number, token: string, scan: boolean): Promise<Job[]> {
    const handler = handlers.get(type)!;
    const claimed: Job[] = [];
    const taken = new Map<string, number>(); // group -> claimed in this call
    const roomOf = (g: string) => perGroup - runningIn(type, g) - (taken.get(g) ?? 0);
    const claimIds = async (ids: string[]) => {
      if (ids.length) for (const r of await store.claimIds(t + leaseMs, token, t, JSON.stringify(ids))) claimed.push(toJob(r));
    };
    const take = (g: string, n: number) => taken.set(g, (taken.get(g) ?? 0) + n);
    /** Claims up to `room` due jobs of group `g`; returns how many. */
    const claimGroup = async (g: string, room: number): Promise<number> => {
      const ids = (await store.groupDueIds(type, g, t, room)).map((r) => r.id);
      await claimIds(ids);
      let n = ids.length;
      if (handler.anchor && n < room)
        for (const payload of await handler.anchor.claim(g, t, room - n, token, t + leaseMs)) {
          const job: Job = {
            id: newId(),
            type,
            payload,
            attempts: 1,
            maxAttempts: handler.maxAttempts ?? defaultMaxAttempts,
            groupKey: g,
            runAt: t + leaseMs,
            leaseToken: token,
          };
          heldOnRow.add(job);
          claimed.push(job);
          n++;
        }
      take(g, n);
      return n;
    };
    // First the groups that freed a slot: their own next due jobs.
    const groups = freed.get(type);
    freed.delete(type);
    for (const g of groups ?? []) {
      // The type has no room left: the group keeps its hint for the next claim.
      if (claimed.length >= limit) {
        markFreed(type, g);
        continue;
      }
      const room = Math.min(roomOf(g), limit - claimed.length);
      if (room <= 0) continue; // the group is full again: its next finished job marks it
      if ((await claimGroup(g, room)) === room && roomOf(g) > 0) markFreed(type, g); // cut short by the type's room
    }
    if (!scan) return claimed;
    // Then expired leases, and the due jobs of every group with room, oldest group first. NB! Never a walk in
    // run_at order that skips the full groups: that walked their whole backlog (1.6–6 ms a pass with 20,000–
    // 35,000 dispatches queued for one account, on every full pass; ~0.2 s at a million-message campaign).
    const expired: string[] = [];
    for (const r of await store.expiredLeases(type, t, limit - claimed.length)) {
      if (r.group_key !== null && roomOf(r.group_key) <= 0) continue;
      expired.push(r.id);
      if (r.group_key !== null) take(r.group_key, 1);
    }
    await claimIds(expired);
    for (const g of await dueGroups(type, t)) {
      if (claimed.length >= limit) break;
      const room = Math.min(roomOf(g), limit - claimed.length);
      if (room > 0) await claimGroup(g, room);
    }
    return claimed;
  }

  /** Claims up to `limit` due jobs of a type. `scan`: false when only the groups that freed a slot are due. */
  async function claim(type: string, limit: number, scan = true): Promise<Job[]> {
    const t = now().getTime();
    const token = leaseToken();
    const perGroup = handlers.get(type)?.groupConcurrency;
    const jobs = await db.join(async () =>
      perGroup ? claimGrouped(type, limit, perGroup, t, token, scan) : (await store.claimDue(t + leaseMs, token, t, type, limit)).map(toJob),
    );
    // Room filled: more may be due. (Not after a claim of the freed groups alone, scan false: their hints are
    // complete — a group cut short keeps its own — and a scan would walk every group once per finished job.)
    if (jobs.length >= limit && (scan || !perGroup)) idleUntil.delete(type);
    else if (scan) {
      // (Without a scan only the freed groups were claimed: the type's hint stands.)
      const due = (await nextDueOf(type)) ?? Infinity;
      // Due jobs left after a scan are all in groups at their limit: idle until one of them frees a slot
      // (`freed`), or a job is enqueued, rescheduled or released (`wake`), or the next full pass.
      idleUntil.set(type, perGroup && due <= t ? Infinity : due);
    }
    // The slots are taken now, so no other pass over-claims while this claim waits for its sync; they are
    // given back if the claim does not commit (the jobs never start).
    for (const j of jobs) takeSlots(type, j.groupKey);
    if (jobs.length)
      db.afterCommit(
        () => {},
        () => jobs.forEach((j) => freeSlots(type, j.groupKey)),
      );
    return jobs;
  }

  /**
   * The anchor's holds whose lease expired before `before` (their process died or stopped without giving
   * them back): `orphans` (this is the one runner, starting: nothing of theirs ran) wait on their rows again,
   * due now; others become pending jobs rows, due now, their attempt counted (a job that takes its process
   * down with it ends dead, not in a loop). Returns how many were found.
   */
  async function sweepHolds(type: string, before: number, orphans: boolean): Promise<number> {
    const handler = handlers.get(type)!;
    if (!handler.anchor) return 0;
    const t = now().getTime();
    let n = 0;
    for (const { groupKey } of await handler.anchor.groups())
      for (;;) {
        const rows = await handler.anchor.expired(groupKey, before, 500);
        for (const r of rows)
          await unhold(
            { ...r, id: newId(), type, groupKey, maxAttempts: handler.maxAttempts ?? defaultMaxAttempts },
            { status: orphans ? "due" : "pending", runAt: t, attempts: orphans ? 0 : 1, error: orphans ? null : "its worker's lease expired" },
          );
        n += rows.length;
        if (rows.length < 500) break;
      }
    return n;
  }

  /** From now: whether the current background slice (db.backgroundSlice) is spent. */
  const sliceTimer = () => {
    const end = performance.now() + db.backgroundSlice();
    return () => performance.now() > end;
  };

  /**
   * Runs the due jobs of an inline type (at most `limit`) inside the current transaction; returns how many.
   * Cut short by the group's background slice, it goes on in the next group (continueInline).
   */
  async function runInline(type: string, handler: JobHandler, limit: number, full: boolean): Promise<number> {
    const t = now().getTime();
    if (full) await store.requeueExpiredInline(t, type);
    const rows = await store.dueInline(type, t, limit);
    // A group's background slice bounds the run too (db.unit's background items).
    const spent = sliceTimer();
    let ran = 0;
    for (const r of rows) {
      if (ran > 0 && spent()) {
        cutShort.add(type);
        break;
      }
      ran++;
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
      let outcome: JobOutcome;
      try {
        outcome = await db.unit(async () => {
          const o = await handler.inline!(job);
          if (o && "writes" in o) throw new Error("an inline job returns its final outcome, not writes()");
          return o;
        });
      } catch (e) {
        const { error, retryAt } = failedAttempt(job, handler, e, t);
        if (retryAt === null) await store.markInlineDead(error, t, job.id);
        else {
          await store.rescheduleInline(retryAt, error, 1, t, null, job.id);
          wake(type, retryAt, job.groupKey);
        }
        continue;
      }
      if (!outcome) await store.deleteInline(job.id);
      else if ("dead" in outcome) await store.markInlineDead(outcome.dead, t, job.id);
      else {
        const payload = outcome.payload ? JSON.stringify(outcome.payload) : null;
        await store.rescheduleInline(outcome.retryAt.getTime(), outcome.error ?? null, outcome.countAttempt === false ? 0 : 1, t, payload, job.id);
        wake(type, outcome.retryAt.getTime(), job.groupKey);
      }
    }
    if (rows.length < limit) idleUntil.set(type, (await nextDueOf(type)) ?? Infinity);
    return ran;
  }

  /**
   * Inline types whose run the slice cut short: they go on in the next group as soon as this one has
   * committed, not after its sync and the next claim pass (which left the sandbox's reports far behind a
   * campaign's sends).
   */
  const cutShort = new Set<string>();
  const continued = new Map<string, Promise<unknown>>(); // a type's run not committed yet: stop() and drain() wait for it
  function continueInline(): void {
    for (const type of cutShort) {
      cutShort.delete(type);
      if (continued.has(type) || stopping) continue;
      const ended = () => continued.get(type) === run && continued.delete(type);
      const run: Promise<unknown> = db
        .unit(() => runInline(type, handlers.get(type)!, Math.max(1, capacity(type)), false), {
          onCommit: () => {
            ended();
            continueInline();
          },
          background: true,
        })
        .catch((e) => {
          ended();
          log.error({ err: e, type }, "inline jobs failed");
        });
      continued.set(type, run);
    }
  }

  /** An attempt that threw, logged: dead after the job's last attempt (retryAt null), else retried after its backoff. */
  function failedAttempt(job: Job, handler: JobHandler, thrown: unknown, t: number): { error: string; retryAt: number | null } {
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
  async function finalise(job: Job, handler: JobHandler, result: { outcome: JobOutcome } | { thrown: unknown }): Promise<void> {
    if (heldOnRow.has(job)) return finaliseHeld(job, handler, result);
    if ("thrown" in result) {
      const t = now().getTime();
      const { error, retryAt } = failedAttempt(job, handler, result.thrown, t);
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
  async function finaliseHeld(job: Job, handler: JobHandler, result: { outcome: JobOutcome } | { thrown: unknown }): Promise<void> {
    const t = now().getTime();
    const row = { ...job, token: job.leaseToken };
    if ("thrown" in result) {
      const { error, retryAt } = failedAttempt(job, handler, result.thrown, t);
      await unhold(row, { status: retryAt === null ? "dead" : "pending", runAt: retryAt ?? t, attempts: job.attempts, error });
      return;
    }
    const outcome = result.outcome;
    if (!outcome) return;
    if ("dead" in outcome) await unhold(row, { status: "dead", runAt: t, attempts: job.attempts, error: outcome.dead });
    else if ("writes" in outcome) throw new Error("a writes() outcome must return a final outcome");
    else {
      // An attempt not counted, with the same payload, waits on its row again (a throttled send); any other
      // retry has a count or a payload to keep: a jobs row.
      const uncounted = outcome.countAttempt === false && !outcome.payload;
      await unhold(row, {
        status: uncounted ? "due" : "pending",
        runAt: outcome.retryAt.getTime(),
        attempts: job.attempts - (outcome.countAttempt === false ? 1 : 0),
        error: outcome.error ?? null,
        payload: outcome.payload,
      });
    }
  }

  /**
   * Every finalisation (the handler's `writes`, then the job row's delete/reschedule/dead) goes through
   * the database's group commit: the jobs that finish in one event-loop turn share one transaction and
   * one fsync. `writes` runs in a unit of its own inside it (a savepoint): a throw rolls back its writes
   * alone and counts as a failed attempt. If the shared COMMIT fails, the jobs keep their leases and are
   * reclaimed when they expire.
   */
  function commitOutcome(job: Job, handler: JobHandler, result: { outcome: JobOutcome } | { thrown: unknown }, onCommit: () => void): Promise<void> {
    return db.unit(
      async () => {
        let final: { outcome: JobOutcome } | { thrown: unknown } = result;
        if ("outcome" in result && result.outcome && "writes" in result.outcome) {
          const writes = result.outcome.writes;
          try {
            final = { outcome: await db.unit(writes) };
          } catch (e) {
            final = { thrown: e };
          }
        }
        await finalise(job, handler, final);
      },
      { onCommit, background: true },
    );
  }

  async function runJob(job: Job): Promise<void> {
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
      if (!stopping) nudge();
      slotFreed?.();
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
          await commitOutcome(job, handler, result, freeSlotsOnce);
          break;
        } catch (e) {
          if (now().getTime() + wait >= job.runAt - 1000) throw e; // job.runAt = its lease expiry
          log.warn({ err: e, jobId: job.id, type: job.type, retryInMs: wait }, "job outcome not stored; trying again");
          await Bun.sleep(wait);
        }
      }
    } finally {
      finished++;
      clearInterval(renewal);
      inflight.delete(job.id);
      freeSlotsOnce();
    }
  }

  /**
   * Passes whose claims are not started yet. NB! Between a claim's commit and its jobs entering `running`
   * lies the group commit's sync: a drain that looked only at `running` then saw nothing to wait for while
   * another pass (the timer's) held claimed jobs, and returned early.
   */
  const passes = new Set<Promise<number>>();
  let finished = 0; // jobs finished so far (drain)
  let slotFreed: (() => void) | null = null; // wakes a drain waiting for a slot (a job's outcome committed)
  function pumpOnce(full = false): Promise<number> {
    const p = claimAndStart(full).finally(() => passes.delete(p));
    passes.add(p);
    return p;
  }

  /**
   * Claims what each type has room for and starts it; returns how many jobs were started. The claims of
   * all types are one group-commit item: under load they share the fsync of the requests' writes instead
   * of costing one of their own (a lost claim after a crash only means the job is claimed again).
   */
  async function claimAndStart(full: boolean): Promise<number> {
    const t = now().getTime();
    if (performance.now() >= nextFullPass) {
      full = true;
      nextFullPass = performance.now() + pollMs;
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
    const { claimed, inline } = await db.unit(
      async () => {
        let ran = 0;
        const jobs: Job[][] = [];
        for (const [type, room] of wanted) {
          if (full) await sweepHolds(type, t, false);
          if (!handlers.get(type)!.inline) jobs.push(await claim(type, room, full || !idle(type)));
          else ran += await runInline(type, handlers.get(type)!, room, full);
        }
        return { claimed: jobs, inline: ran };
      },
      { onCommit: continueInline, background: true },
    );
    let startedJobs = inline;
    for (const batch of claimed) {
      for (const job of batch) {
        if (stopping) {
          // Claimed while stopping: give the job back now rather than after its lease expires.
          freeSlots(job.type, job.groupKey);
          giveBackLater(job);
          idleUntil.delete(job.type);
          continue;
        }
        startJob(job);
        startedJobs++;
      }
    }
    return startedJobs;
  }

  const startInLine = startLine(sliceTimer);

  /** Runs a claimed job whose slots are taken (its handler from the next start slice on). */
  function startJob(job: Job): void {
    const set = running.get(job.type) ?? new Set();
    running.set(job.type, set);
    const p: Promise<void> = new Promise<void>((resolve) => {
      startInLine(() => {
        if (!stopping) return resolve(runJob(job));
        // Stopping before it started: given back now rather than after its lease expires.
        freeSlots(job.type, job.groupKey);
        giveBackLater(job);
        idleUntil.delete(job.type);
        resolve();
      });
    })
      .catch((e) => log.error({ err: e, jobId: job.id }, "job finalisation failed"))
      .finally(() => {
        set.delete(p);
        if (!stopping) nudge();
      });
    set.add(p);
  }

  async function pump(): Promise<void> {
    if (stopping || !started) return;
    if (pumping) {
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        await pumpOnce();
      } while (pumpAgain && !stopping);
    } catch (e) {
      log.error({ err: e }, "job loop error");
    } finally {
      pumping = false;
    }
    schedule();
  }

  function schedule(): void {
    if (timer) clearTimeout(timer);
    if (stopping || !started) return;
    // From the claim hints, without a query: a type with room and no hint was claimed in full (more may
    // be due now); a type without room is woken by its running jobs as they finish.
    const t = now().getTime();
    let next = t + pollMs;
    for (const type of handlers.keys()) if (capacity(type) > 0) next = Math.min(next, idleUntil.get(type) ?? t);
    for (const due of groupDueAt.values()) for (const at of due.values()) next = Math.min(next, at);
    timer = setTimeout(() => void db.outside(pump), Math.max(0, next - t));
  }

  function nudge(): void {
    if (!started || stopping) return;
    // NB! The next macrotask, not a microtask: nudges come from inside units of work (an enqueue), and a
    // group commit's items await their stores — a microtask would run the pump between them, inside the
    // open transaction, as if it were part of the unit (db.unit). A group ends within its macrotask.
    // NB! And outside the unit's chain: on PostgreSQL an immediate inherits it (db.outside).
    setImmediate(() => void db.outside(pump));
  }

  /**
   * Runs jobs until none is due and none runs. Like the job loop, it claims by the hints after a first full
   * pass (a full pass, a claim of every type, after each finished job made a drain's claims its largest
   * cost), and it ends only after a full pass found nothing.
   */
  async function drain({ timeoutMs = 30_000 }: { timeoutMs?: number } = {}): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let total = 0;
    let full = true;
    for (;;) {
      // NB! A job that finished while this pass claimed (its slot freed after the pass looked) leaves
      // nothing running and its group's next job unclaimed: then the drain looks again.
      const finishedBefore = finished;
      const n = await pumpOnce(full);
      total += n;
      // (Another pass failing is its pump's to log: here it only means "look again".)
      const all: Promise<unknown>[] = [
        ...[...running.values()].flatMap((s) => [...s]),
        ...[...passes].map((p) => p.catch(() => 0)),
        ...handovers,
        ...continued.values(),
      ];
      if (n === 0 && all.length === 0 && finished === finishedBefore) {
        if (full) return total;
        full = true;
        continue;
      }
      full = false;
      if (Date.now() > deadline) throw new Error("queue drain timed out");
      if (all.length) await Promise.race([...all, new Promise<void>((resolve) => (slotFreed = resolve))]);
      slotFreed = null;
    }
  }

  /** After `jobs retry`: the job is pending again, due now. */
  function retried(done: boolean): boolean {
    if (done) {
      idleUntil.clear();
      nudge();
    }
    return done;
  }

  return {
    enqueueJob,
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
      started = true;
      stopping = false;
      nudge();
    },
    async stop(timeoutMs = 10_000) {
      stopping = true;
      if (timer) clearTimeout(timer);
      const all = [...[...running.values()].flatMap((s) => [...s]), ...handovers, ...continued.values()];
      await Promise.race([Promise.allSettled(all), Bun.sleep(timeoutMs)]);
      // Whatever is still running gets its lease released so the next start picks it up at once.
      // (A lease renewed meanwhile keeps its token: the job's own is still the one to release with.)
      await db.join(async () => {
        for (const job of inflight.values()) await giveBack(job);
      });
      await Promise.allSettled([...givingBack]);
      started = false;
    },
    nudge,
    async releaseOrphans() {
      idleUntil.clear();
      freed.clear();
      groupDueAt.clear();
      const t = now().getTime();
      let n = await store.releaseAllRunning(t);
      await db.unit(async () => {
        for (const type of handlers.keys()) n += await sweepHolds(type, Number.MAX_SAFE_INTEGER, true);
      });
      return n;
    },
    drain,
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
        const at = await nextDueOf(type);
        if (at !== null && at <= t) out[type] = t - at;
      }
      return out;
    },
  };
}
