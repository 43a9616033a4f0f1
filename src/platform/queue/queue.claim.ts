/**
 * Claims: the due jobs of a type this process has room for, taken under a fresh lease in one transaction —
 * for a grouped type the groups that freed a slot first, then (a scan) expired leases and every group with
 * due jobs, a group's jobs rows before its anchor's rows — and the claim hints the claim leaves behind.
 */
import { newId } from "../ids";
import type { QueueState } from "./queue.state";
import type { ClaimedJobRow } from "./queue.store";
import type { Job } from "./queue.types";

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

/** The groups of a grouped type with due jobs, oldest first: in jobs rows and on its anchor's rows. */
async function dueGroups(q: QueueState, type: string, t: number): Promise<string[]> {
  const { store, handlers } = q;
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
export async function nextDueOf(q: QueueState, type: string): Promise<number | null> {
  const { store, handlers } = q;
  let due = (await store.nextDueOfType(type)) ?? Infinity;
  for (const g of (await handlers.get(type)!.anchor?.groups()) ?? []) if (g.first !== null) due = Math.min(due, g.first);
  return due === Infinity ? null : due;
}

/**
 * Claim for a type with a per-group limit: the due jobs of groups that still have room, at most their room
 * each — first the groups that freed a slot, then (scan) every group with due jobs, oldest first. A group's
 * jobs rows come before its anchor's rows. One transaction, so the picks and the UPDATE see the same rows.
 */
async function claimGrouped(q: QueueState, type: string, limit: number, perGroup: number, t: number, token: string, scan: boolean): Promise<Job[]> {
  const { store, handlers, leaseMs, defaultMaxAttempts, runningIn, freed, markFreed, heldOnRow } = q;
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
  for (const g of await dueGroups(q, type, t)) {
    if (claimed.length >= limit) break;
    const room = Math.min(roomOf(g), limit - claimed.length);
    if (room > 0) await claimGroup(g, room);
  }
  return claimed;
}

/** Claims up to `limit` due jobs of a type. `scan`: false when only the groups that freed a slot are due. */
export async function claim(q: QueueState, type: string, limit: number, scan = true): Promise<Job[]> {
  const { db, store, handlers, now, leaseMs, leaseToken, idleUntil, takeSlots, freeSlots } = q;
  const t = now().getTime();
  const token = leaseToken();
  const perGroup = handlers.get(type)?.groupConcurrency;
  const jobs = await db.join(async () =>
    perGroup ? claimGrouped(q, type, limit, perGroup, t, token, scan) : (await store.claimDue(t + leaseMs, token, t, type, limit)).map(toJob),
  );
  // Room filled: more may be due. (Not after a claim of the freed groups alone, scan false: their hints are
  // complete — a group cut short keeps its own — and a scan would walk every group once per finished job.)
  if (jobs.length >= limit && (scan || !perGroup)) idleUntil.delete(type);
  else if (scan) {
    // (Without a scan only the freed groups were claimed: the type's hint stands.)
    const due = (await nextDueOf(q, type)) ?? Infinity;
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
