/**
 * Claim hints: which types, and which groups of grouped types, are worth a claim statement on the next pump.
 * In memory, per process; a full pass (every type) every `pollMs` covers what they cannot see.
 */
import type { JobHandler } from "./queue.types";

export function claimHints(handlers: Map<string, JobHandler>) {
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
  return { idleUntil, freed, markFreed, groupDueAt, wake };
}

export type ClaimHints = ReturnType<typeof claimHints>;
