/**
 * Messages sent later (DESIGN §18). POST /messages with `scheduledAt` writes the message as `scheduled`,
 * debited, with a durable `message.scheduled` job due at that time (messages.service createOutboundMessage,
 * one transaction: outbox). This file is what happens next: the job falling due, and a cancel.
 *
 * The due job and a cancel race for the same message; each moves it off `scheduled` with a conditional
 * UPDATE (the store's claimDue / cancelScheduled), so exactly one of them wins and the loser changes nothing —
 * the price is refunded at most once, and a canceled message is never sent.
 */
import type { MessagesNeeds } from "./messages.needs";
import { AppError, notFound } from "../../platform/errors";
import type { Job, JobOutcome } from "../../platform/queue/queue";
import type { Channel } from "../../channels/channel.types";
import type { MessageType } from "../../channels/channel.rules";
import { messagesStore, type MessageRow } from "./messages.repository";
import { DISPATCH_JOB, SCHEDULED_SEND_JOB } from "./messages.jobs";
import { applyStatus } from "./messages.lifecycle";
import { refusal, refusalReason, sendVerdict } from "./messages.verdict";
import { messageView } from "./messages.views";

/**
 * The due job of a scheduled message. Inline (database only, no I/O): it runs inside the unit of work that
 * takes the job and deletes it, so the message's move and the job's removal commit together — a restart never
 * runs it twice to any effect, and a run that finds the message canceled (or already released) does nothing.
 * Eligibility is decided again now (consent, window, block: the one verdict of DESIGN §9); a refusal fails
 * the message with the reason and code a direct send would get, refunded (applyStatus, `message.failed`).
 */
export async function releaseDueMessage(deps: MessagesNeeds, job: Job<{ messageId: string }>): Promise<JobOutcome> {
  const store = messagesStore(deps.db);
  const now = deps.now();
  if (!(await store.claimDue(job.payload.messageId, now))) return;
  const m = (await store.messageById(job.payload.messageId))!;
  const channel = m.channel as Channel;
  const { verdict, lastInboundAt } = await sendVerdict(deps, {
    companyId: m.companyId,
    contactId: m.contactId,
    channel,
    channelAccountId: m.channelAccountId,
    type: m.type as MessageType,
    purpose: "direct",
  });
  if (!verdict.ok) {
    const refused = refusal(verdict, { channel, lastInboundAt });
    await applyStatus(deps, {
      message: m,
      status: "failed",
      at: now,
      fresh: true,
      error: { reason: refusalReason(verdict), code: refused.code, message: refused.message },
    });
    return;
  }
  // From here on it is a queued message like any other: its row is its dispatch job (the account's send rate
  // applies from now, not while it waited).
  // `hold` is called before enqueue returns (queue.types.ts): due now, or handed over to a worker with room.
  const hold = { token: null as string | null, until: now.getTime() };
  await deps.queue.enqueueJob({ type: DISPATCH_JOB, payload: { messageId: m.id }, groupKey: m.channelAccountId, hold: (l) => Object.assign(hold, l) });
  await store.placeOnLane(m.id, hold);
}

export function wireScheduledSends(deps: MessagesNeeds): void {
  deps.queue.register(SCHEDULED_SEND_JOB, { inline: (job) => releaseDueMessage(deps, job) });
}

/**
 * POST /messages/{id}/cancel: a scheduled message is canceled and its price refunded (ledger), `message.canceled`
 * emitted — all in the caller's unit. 409 CONFLICT for any other status, also when its due job took it first.
 * Its due job stays and finds nothing to do.
 */
export async function cancelScheduledMessage(
  deps: Pick<MessagesNeeds, "db" | "now" | "ledger" | "events">,
  { companyId, id }: { companyId: string; id: string },
) {
  const { db, now, ledger, events } = deps;
  return db.unit(async () => {
    const store = messagesStore(db);
    const found = await store.messageOfCompany(companyId, id);
    if (!found) throw notFound("message");
    if (!(await store.cancelScheduled(companyId, id, now()))) {
      const status = (await store.messageStatus(id)) ?? found.status;
      throw new AppError("CONFLICT", `Only a scheduled message can be canceled; this one is ${status}`, [
        { pointer: "path:id", message: `the message is ${status}` },
      ]);
    }
    if (found.charged) await ledger.refund({ companyId, amount: found.unitPrice, messageId: id, description: "refund: scheduled message canceled" });
    const message = (await store.messageById(id)) as MessageRow;
    events.emit({
      companyId,
      type: "message.canceled",
      data: { message: messageView(message) },
      refs: { messageId: id, campaignId: message.campaignId, contactId: message.contactId, from: "scheduled" },
    });
    return { message };
  });
}
