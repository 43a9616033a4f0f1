/**
 * The status lifecycle of a message: queued → sent → delivered → read, or failed (refunded when it never
 * reached `sent`); one event per step, and a USER_BLOCKED failure removes the contact's consent on the channel.
 * applyStatus is the only writer of a message row after acceptance.
 */
import type { FailureReason } from "../../channels/channel.types";
import type { MessagesNeeds } from "./messages.needs";
import { setConsent } from "../contacts/contacts.consent";
import { messagesStore, type MessageHead, type MessageRow } from "./messages.repository";
import { messageView } from "./messages.views";

const STATUS_ORDER: Record<string, number> = { queued: 0, sent: 1, delivered: 2, read: 3 };

type StatusPlan = { changes: Partial<MessageRow>; steps: ("sent" | "delivered" | "read" | "failed")[] };

/** What moving `current` to `status` changes on its row, and the steps it takes; null: it does not move. */
function planStatus(
  current: MessageHead,
  status: "sent" | "delivered" | "read" | "failed",
  at: Date,
  error: { reason: FailureReason | string; code?: string; message: string } | undefined,
): StatusPlan | null {
  const changes: Partial<MessageRow> = {};
  const steps: StatusPlan["steps"] = [];
  if (status === "failed") {
    if (current.status !== "queued" && current.status !== "sent") return null;
    Object.assign(changes, {
      status: "failed",
      failedAt: at,
      errorReason: error?.reason ?? "PROVIDER_REJECTED",
      errorCode: error?.code ?? error?.reason ?? null,
      errorMessage: error?.message ?? null,
    });
    steps.push("failed");
    // Refunded (by the caller, with the write) when it never reached `sent`.
    if (current.charged && !current.refunded && current.status === "queued") changes.refunded = true;
    return { changes, steps };
  }
  // NB! scheduled and canceled are outside STATUS_ORDER (they would read as queued): no report moves them.
  if (current.status === "failed" || current.status === "received" || current.status === "scheduled" || current.status === "canceled") return null;
  const from = STATUS_ORDER[current.status] ?? 0;
  const to = STATUS_ORDER[status]!;
  if (to <= from) return null;
  for (const s of ["sent", "delivered", "read"] as const) {
    const o = STATUS_ORDER[s]!;
    if (o > from && o <= to) {
      changes[`${s}At`] = at;
      steps.push(s);
    }
  }
  changes.status = status;
  return { changes, steps };
}

/** The plan's changes with what every write of it carries: the provider's id when given, and the time. */
function finish(changes: Partial<MessageRow>, providerMessageId: string | undefined, at: Date): Partial<MessageRow> {
  if (providerMessageId) changes.providerMessageId = providerMessageId;
  changes.updatedAt = at;
  return changes;
}

/**
 * Moves a message forward (queued → sent → delivered → read) or to failed (from queued or sent), storing
 * each status time and emitting one event per step. Late or duplicate reports never move it backwards;
 * a read report for a message not yet marked delivered emits delivered first. `fresh`: `message` was read
 * in the caller's current transaction, so it is not read again.
 *
 * NB! This is the only writer of a message row, and every write it makes moves the status (forward, or to
 * failed, which is final). So a message whose status is still the one read earlier is unchanged since: a
 * `message` read outside the transaction (the dispatch reads it before the provider call) is written with its
 * status as the write's condition, and read again whole only if that moved.
 *
 * In the caller's unit when there is one (the dispatch's `writes()`, the inbound paths: each rolls back on a
 * throw), else a unit of its own.
 */
export async function applyStatus(
  deps: MessagesNeeds,
  {
    message,
    status,
    at,
    providerMessageId,
    error,
    fresh = false,
  }: {
    message: MessageHead;
    status: "sent" | "delivered" | "read" | "failed";
    at: Date;
    providerMessageId?: string;
    error?: { reason: FailureReason | string; code?: string; message: string };
    fresh?: boolean;
  },
): Promise<MessageHead> {
  const { db, events, now } = deps;
  const store = messagesStore(db);
  return db.join(async () => {
    // Planned from the status the caller read; the write is made only while the row still has it (one statement,
    // no re-read first). When the status moved meanwhile, or the plan is to change nothing on a status read
    // outside this transaction, the row is read again here and the plan made from that.
    let current = message;
    let plan = planStatus(current, status, at, error);
    while (!plan || !(await store.recordStatus(current.id, current.status, finish(plan.changes, providerMessageId, now())))) {
      if (!plan && fresh) return current;
      const head = await store.messageHead(message.id);
      if (!head) return current; // erased meanwhile
      current = head;
      fresh = true;
      plan = planStatus(current, status, at, error);
    }
    const { changes, steps } = plan;
    if (changes.refunded)
      // The company's balance row, last (as the send's debit: db.atEnd).
      await db.atEnd(`2 balance ${current.companyId}`, () =>
        deps.ledger.refund({
          companyId: current.companyId,
          amount: current.unitPrice,
          messageId: current.id,
          description: "refund: message failed before sent",
        }),
      );
    const updated = { ...current, ...changes } as MessageHead;
    // The payload is built only if a subscriber asks for it (a webhook endpoint wants the event, a campaign's
    // failed message): the refs say whose message it is. A subscriber loads it inside this unit, so it reads the
    // row as this change left it (not `RETURNING *`: materialising every row cost 70 % more per report than the
    // plain UPDATE, for a payload that is most often never read — bench/RESULTS.md).
    let view: Promise<ReturnType<typeof messageView>> | undefined;
    const data = async () => ({ message: await (view ??= store.messageById(current.id).then((row) => messageView(row!))) });
    // `from`: the status each step leaves (a read report on a sent message is two steps: sent → delivered → read).
    let from = current.status;
    for (const s of steps) {
      events.emit({
        companyId: current.companyId,
        type: `message.${s}`,
        data,
        refs: { messageId: updated.id, campaignId: updated.campaignId, contactId: updated.contactId, from },
      });
      from = s;
    }
    if (status === "failed" && error?.reason === "USER_BLOCKED")
      // The contact blocked us on this channel: their consent there is removed (seed: Telegram USER_BLOCKED).
      await setConsent({
        db,
        events,
        now,
        companyId: current.companyId,
        contactId: current.contactId,
        channels: [current.channel],
        status: "opted_out",
        source: "provider",
      });
    return updated;
  });
}
