/**
 * The one inbound path. Every adapter's events — webhooks, long polling, inbound SMTP, sandbox timers and
 * the sandbox simulation — arrive here: contact and identity resolution, conversation, the inbound message,
 * the messaging window, status updates, blocks, and events. A delivery commits in chunks (processInbound),
 * and a duplicate provider delivery (same account + provider message id) is ignored.
 */
import type { ChannelAccount, InboundEvent } from "../../channels/channel.types";
import type { MessagesNeeds } from "./messages.needs";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { findCompanyBySlug } from "../companies/companies.service";
import { getConsent, setConsent } from "../contacts/contacts.consent";
import { findOrCreateContactByIdentity } from "../contacts/contacts.service";
import { conversationForInbound, recordInbound, touchConversation } from "../conversations/conversations.service";
import { applyReport, knownContactOf } from "./messages.reports";
import { messageView, newMessageRow } from "./messages.views";
import { messagesStore } from "./messages.repository";
import { applyTemplateReview } from "../templates/templates.review";

/** Keywords that change consent when they are the whole inbound text (case-insensitive). */
const OPT_OUT = new Set(["stop", "unsubscribe", "stopall", "cancel", "end", "quit"]);
const OPT_IN = new Set(["start", "unstop", "subscribe"]);

/**
 * How long one chunk of a delivery may hold the event loop (ms). NB! A delivery of thousands of events (a
 * provider's backlog after an outage) in one synchronous transaction held it for seconds (/healthz stalled
 * 5.5 s behind 10,000 new contacts' messages, ~0.5 ms each): between chunks it serves everyone else.
 */
const INBOUND_SLICE_MS = 20;

/**
 * Stores a verified delivery's events, in chunks of at most INBOUND_SLICE_MS, each one group-committed item
 * (its fsync shared with the other webhooks and sandbox reports of that event-loop turn). The promise resolves
 * — and the provider is acknowledged — only after the last chunk committed. A failure part-way rejects it: the
 * provider redelivers the whole batch and the duplicate check skips what the committed chunks stored.
 * An event whose data is refused (an identity that is no phone number, a field of the wrong type) is logged and
 * skipped; the rest of the delivery is stored (DESIGN §23). `strict`: the refusal is thrown instead (the
 * sandbox simulation, whose caller is an API client owed its 422).
 */
export async function processInbound(
  deps: MessagesNeeds,
  account: ChannelAccount,
  events: InboundEvent[],
  { strict = false }: { strict?: boolean } = {},
): Promise<void> {
  const each = strict ? (_: InboundEvent, apply: () => Promise<void>) => apply() : skipRefused(deps, account);
  let next = 0;
  while (next < events.length) {
    const from = next;
    // (A group commit may run this twice; the run that commits says how far it got.)
    next = await deps.db.unit(async () => {
      const company = await findCompanyBySlug({ db: deps.db, slug: account.company });
      if (!company) {
        deps.log.warn({ accountId: account.id, company: account.company }, "inbound for an account whose company does not exist; dropped");
        return events.length;
      }
      const until = performance.now() + INBOUND_SLICE_MS;
      let i = from;
      do {
        const event = events[i++]!;
        await each(event, () => applyInbound(deps, company.id, account, event));
      } while (i < events.length && performance.now() < until);
      return i;
    });
  }
}

/**
 * An error that says the event's own data is unusable (skip it), as opposed to one that says the store cannot
 * take writes now (a full disk, a busy or lost database: fail the delivery, so the provider retries it).
 */
function refusesTheEvent(error: unknown): boolean {
  if (error instanceof AppError) return error.status < 500;
  if (error instanceof TypeError || error instanceof RangeError) return true;
  const code = (error as { code?: unknown } | null)?.code;
  // SQLite constraint failures; PostgreSQL's data exceptions (22xxx) and integrity violations (23xxx).
  return typeof code === "string" && (code.startsWith("SQLITE_CONSTRAINT") || /^2[23][0-9A-Z]{3}$/.test(code));
}

/** Runs one event so that a refusal undoes its writes alone (a nested unit: a savepoint) and is logged, and the batch goes on. */
function skipRefused(deps: MessagesNeeds, account: ChannelAccount) {
  return async (event: InboundEvent, apply: () => Promise<void>) => {
    try {
      await deps.db.unit(apply);
    } catch (error) {
      if (!refusesTheEvent(error)) throw error;
      const id = "providerMessageId" in event ? event.providerMessageId : undefined;
      // Logged once the skip is final (a group commit may run this twice: see db.batch).
      deps.db.afterCommit(
        () =>
          deps.log.warn(
            { err: error, accountId: account.id, kind: event.kind, providerMessageId: id },
            "inbound event refused and skipped; the rest of the delivery is stored",
          ),
        () => {},
      );
    }
  };
}

async function applyInbound(deps: MessagesNeeds, companyId: string, account: ChannelAccount, event: InboundEvent): Promise<void> {
  const company = { id: companyId };
  switch (event.kind) {
    case "message":
      await receiveMessage(deps, company.id, account, event);
      break;
    case "status":
    case "watermark":
      // Reports on what we sent: messages.reports.ts (the same path as the reports applied later).
      await applyReport(deps, { companyId: company.id, account, event });
      break;
    case "blocked": {
      const contact = await knownContactOf(deps, company.id, account, event.from.value);
      // A block removes consent on the channel; an unblock does not grant it (consent must be explicit).
      if (contact && event.blocked)
        await setConsent({
          db: deps.db,
          events: deps.events,
          now: deps.now,
          companyId: company.id,
          contactId: contact,
          channels: [account.channel],
          status: "opted_out",
          source: "provider",
        });
      break;
    }
    case "template":
      // A provider's review of one of our templates (DESIGN §17): the templates module owns it.
      await applyTemplateReview(deps, account, event);
      break;
  }
}

async function receiveMessage(
  deps: MessagesNeeds,
  companyId: string,
  account: ChannelAccount,
  event: Extract<InboundEvent, { kind: "message" }>,
): Promise<void> {
  const { db, events, now } = deps;
  const store = messagesStore(db);
  // No savepoint of its own: its callers (a group-commit item, a scheduled report's nested unit) undo it.
  await db.join(async () => {
    if (await store.messageIdByProviderId(account.id, event.providerMessageId)) return; // a duplicate delivery
    const found = (await findOrCreateContactByIdentity({
      db,
      events,
      now,
      companyId,
      channel: account.channel,
      value: event.from.value,
      displayName: event.from.displayName,
      username: event.from.username,
      create: true,
    }))!;
    const contactId = found.contact.id;
    const conversationId = await conversationForInbound({ db, events, now, companyId, contactId, channel: account.channel, channelAccountId: account.id });
    await recordInbound({ db, now, companyId, contactId, channelAccountId: account.id, timestamp: event.timestamp, conversationRef: event.conversationRef });

    let replyTo: string | null = null;
    if (event.inReplyTo) replyTo = (await store.messageIdByProviderId(account.id, event.inReplyTo)) ?? null;

    const at = now();
    const { type, ...rest } = event.content;
    const content: Record<string, unknown> = rest;
    // A tap (DESIGN §16): our id of the message tapped, inside the content's JSON (no column of its own).
    if (event.content.type === "interactive") content.interactive = { ...event.content.interactive, inReplyTo: replyTo };
    const row = newMessageRow({
      id: newId(),
      companyId,
      conversationId,
      contactId,
      channel: account.channel,
      channelAccountId: account.id,
      direction: "inbound",
      type,
      content: { ...content, ...(event.referral ? { referral: event.referral } : {}) } as Record<string, unknown>,
      address: found.identity.value,
      status: "received",
      replyToMessageId: replyTo,
      providerMessageId: event.providerMessageId,
      providerTimestamp: event.timestamp,
      createdAt: at,
    });
    await store.insertMessage(row);
    await touchConversation({ db, conversationId, messageId: row.id, at, unread: "inbound" });
    events.emit({ companyId, type: "message.received", data: { message: messageView(row) } });

    const text = event.content.type === "text" ? event.content.text.trim().toLowerCase() : "";
    // Telegram's Start button sends "/start" (or "/start <payload>" from a deep link): it counts as "start",
    // since it is how a user who blocked the bot comes back — else the consent the block removed could never
    // be restored by the user. (Other bot commands such as /cancel are dialogue, not consent.)
    const keyword = /^\/start(?:@\w+)?(?:\s+\S+)?$/.test(text) ? "start" : text;
    const consent = OPT_OUT.has(keyword) ? "opted_out" : OPT_IN.has(keyword) ? "opted_in" : null;
    if (consent && (await getConsent({ db, companyId, contactId, channel: account.channel })) !== consent)
      await setConsent({ db, events, now, companyId, contactId, channels: [account.channel], status: consent, source: "inbound_keyword" });
  });
}
