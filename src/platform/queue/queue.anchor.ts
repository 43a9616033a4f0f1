/**
 * The anchor's holds (JobAnchor: a type that keeps its jobs on the business rows they are about): a hold
 * leaving its row for a jobs row or its row again (unhold), and the holds whose lease expired (sweepHolds).
 */
import { newId } from "../ids";
import type { QueueState } from "./queue.state";

/**
 * A held job leaves its hold, only while `token` still holds the row (false, nothing written, when it does
 * not: another process took it over, or the row left its anchor and there is nothing left to run): `due`
 * waits on its row again (an attempt not counted), `pending` and `dead` become a jobs row.
 */
export async function unhold(
  q: QueueState,
  r: { id: string; type: string; payload: Record<string, unknown>; token: string; groupKey: string | null; maxAttempts: number },
  to: { status: "due" | "pending" | "dead"; runAt: number; attempts: number; error: string | null; payload?: Record<string, unknown> },
): Promise<boolean> {
  const { handlers, store, now, wake } = q;
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

/**
 * The anchor's holds whose lease expired before `before` (their process died or stopped without giving
 * them back): `orphans` (this is the one runner, starting: nothing of theirs ran) wait on their rows again,
 * due now; others become pending jobs rows, due now, their attempt counted (a job that takes its process
 * down with it ends dead, not in a loop). Returns how many were found.
 */
export async function sweepHolds(q: QueueState, type: string, before: number, orphans: boolean): Promise<number> {
  const { handlers, now, defaultMaxAttempts } = q;
  const handler = handlers.get(type)!;
  if (!handler.anchor) return 0;
  const t = now().getTime();
  let n = 0;
  for (const { groupKey } of await handler.anchor.groups())
    for (;;) {
      const rows = await handler.anchor.expired(groupKey, before, 500);
      for (const r of rows)
        await unhold(
          q,
          { ...r, id: newId(), type, groupKey, maxAttempts: handler.maxAttempts ?? defaultMaxAttempts },
          { status: orphans ? "due" : "pending", runAt: t, attempts: orphans ? 0 : 1, error: orphans ? null : "its worker's lease expired" },
        );
      n += rows.length;
      if (rows.length < 500) break;
    }
  return n;
}
