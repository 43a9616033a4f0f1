/**
 * Provider status reports: applied at once (a webhook's or poll's report by provider message id, a Messenger
 * watermark), or stored to apply later (a send's SendResult.reports, a report that overtook our commit of the
 * send) as SCHEDULED_INBOUND_JOB jobs, which messages.wire.ts runs through messages.inbound.ts back to
 * applyProviderStatus. Each report is one messages.lifecycle.ts applyStatus.
 */
import type { InboundEvent } from "../../channels/channel.types";
import type { MessagesNeeds } from "./messages.needs";
import { writeBehind } from "../../db/write-behind";
import { conversationsOfContactOn } from "../conversations/conversations.service";
import { SCHEDULED_INBOUND_JOB } from "./messages.jobs";
import { applyStatus } from "./messages.lifecycle";
import { messagesStore } from "./messages.repository";

/**
 * Applies a provider status report (by provider message id) — from webhooks, polling or sandbox timers.
 * A report on a message not stored (yet) is deferred to a job of its own, or, given `unknown`, left there
 * for the caller to retry (a scheduled report's job comes back itself).
 */
export async function applyProviderStatus(
  deps: MessagesNeeds,
  accountId: string,
  event: Extract<InboundEvent, { kind: "status" }>,
  unknown?: InboundEvent[],
): Promise<void> {
  await deps.db.join(async () => {
    const m = await messagesStore(deps.db).messageHeadByProviderId(accountId, event.providerMessageId);
    if (!m) {
      // Either not ours (sent from the provider's own console), or a report that overtook our own commit of
      // the send (fast providers answer the send and call back within milliseconds): try again shortly.
      if (unknown) unknown.push(event);
      else
        await deps.queue.enqueueJob({
          type: SCHEDULED_INBOUND_JOB,
          payload: { accountId, schedule: [{ at: deps.now().getTime(), events: [event] }] },
          runAt: new Date(deps.now().getTime() + 500),
        });
      return;
    }
    const error = event.error ? { reason: event.error.reason, code: event.error.providerCode, message: event.error.message } : undefined;
    // (Already inside a unit: applyStatus joins it, no savepoint per report.)
    await applyStatus(deps, { message: m, status: event.status, at: event.timestamp, error, fresh: true });
  });
}

type Schedule = { at: number; events: InboundEvent[] }[];
/** Sends whose later reports share one job (a job's run is one unit of the queue's slice: ~35 µs a report). */
const REPORTS_PER_JOB = 25;
/** Reports due later within the same step are applied in one run (each a little late, never early). */
const REPORT_STEP_MS = 25;
const keptReports = new WeakMap<MessagesNeeds["db"], ReturnType<typeof writeBehind<Schedule>>>();

/**
 * Stores reports a provider will make later (SendResult.reports) as inline jobs that apply each at its time
 * (messages.wire.ts). Call inside the transaction that records the send. Kept back until it commits: the
 * sends of one group commit share jobs, REPORTS_PER_JOB sends each, their reports due in steps of
 * REPORT_STEP_MS (a job per send cost its insert, reschedule and delete: ~15 % of the main thread while a
 * campaign fanned out on the sandbox).
 */
export async function scheduleReports(
  deps: Pick<MessagesNeeds, "queue" | "db" | "now">,
  accountId: string,
  reports: { at: Date; events: InboundEvent[] }[],
): Promise<void> {
  let kept = keptReports.get(deps.db);
  if (!kept) keptReports.set(deps.db, (kept = writeBehind<Schedule>(deps.db, (account, schedules) => storeReports(deps, account, schedules))));
  const now = deps.now().getTime();
  const step = (at: number) => (at <= now ? at : Math.ceil(at / REPORT_STEP_MS) * REPORT_STEP_MS);
  await kept.add(
    accountId,
    reports.map((r) => ({ at: step(r.at.getTime()), events: r.events })),
  );
}

async function storeReports(deps: Pick<MessagesNeeds, "queue">, accountId: string, schedules: Schedule[]): Promise<void> {
  for (let i = 0; i < schedules.length; i += REPORTS_PER_JOB) {
    const byTime = new Map<number, InboundEvent[]>();
    for (const schedule of schedules.slice(i, i + REPORTS_PER_JOB))
      for (const { at, events } of schedule) {
        const same = byTime.get(at);
        if (same) same.push(...events);
        else byTime.set(at, [...events]);
      }
    const schedule = [...byTime].sort((a, b) => a[0] - b[0]).map(([at, events]) => ({ at, events }));
    await deps.queue.enqueueJob({ type: SCHEDULED_INBOUND_JOB, payload: { accountId, schedule }, runAt: new Date(schedule[0]!.at) });
  }
}

/** Messenger-style watermark: every outbound message to the contact up to `watermark` is delivered/read. */
export async function applyWatermark(
  deps: MessagesNeeds,
  { accountId, contactId, status, watermark }: { accountId: string; contactId: string; status: "delivered" | "read"; watermark: Date },
): Promise<void> {
  const conversationIds = await conversationsOfContactOn({ db: deps.db, contactId, channelAccountId: accountId });
  const rows = await messagesStore(deps.db).outboundSentUpTo({
    conversationIds,
    statuses: status === "read" ? ["sent", "delivered"] : ["sent"],
    sentBefore: watermark,
  });
  // One after the other: each status change is a step of the caller's unit.
  for (const m of rows) await applyStatus(deps, { message: m, status, at: watermark });
}
