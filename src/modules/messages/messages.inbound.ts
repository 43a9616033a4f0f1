/**
 * The one inbound path. Every adapter's events — webhooks, long polling, inbound SMTP, sandbox timers and
 * the sandbox simulation — arrive here: contact and identity resolution, conversation, the inbound message,
 * the messaging window, status updates, blocks, and events. Each event commits in its own transaction, and
 * a duplicate provider delivery (same account + provider message id) is ignored.
 */
import type { ChannelAccount, InboundEvent } from "../../channels/channel.types";
import type { Deps } from "../../deps";
import { newId } from "../../platform/ids";
import { findCompanyBySlug } from "../companies/companies.service";
import { findOrCreateContactByIdentity, getConsent, setConsent } from "../contacts/contacts.service";
import { conversationForInbound, recordInbound, touchConversation } from "../conversations/conversations.service";
import { applyProviderStatus, applyWatermark, messageView, newMessageRow } from "./messages.service";
import * as repo from "./messages.repository";

/** Keywords that change consent when they are the whole inbound text (case-insensitive). */
const OPT_OUT = new Set(["stop", "unsubscribe", "stopall", "cancel", "end", "quit"]);
const OPT_IN = new Set(["start", "unstop", "subscribe"]);

export async function processInbound(deps: Deps, account: ChannelAccount, events: InboundEvent[]): Promise<void> {
  // One group-committed batch for all events of this delivery (one fsync, shared with the other webhooks
  // and sandbox reports of this event-loop turn); the provider is acknowledged only after it committed.
  await deps.db.batch(() => applyInboundEvents(deps, account, events));
}

/**
 * The same, synchronously inside the caller's transaction (a scheduled report's job commits with it).
 * `unknown`: where status reports on messages not stored yet go, instead of a deferred job each.
 */
export function applyInboundEvents(deps: Deps, account: ChannelAccount, events: InboundEvent[], unknown?: InboundEvent[]): void {
  const company = findCompanyBySlug({ db: deps.db, slug: account.company });
  if (!company) {
    deps.log.warn({ accountId: account.id, company: account.company }, "inbound for an account whose company does not exist; dropped");
    return;
  }
  for (const event of events) applyInbound(deps, company.id, account, event, unknown);
}

function applyInbound(deps: Deps, companyId: string, account: ChannelAccount, event: InboundEvent, unknown?: InboundEvent[]): void {
  const company = { id: companyId };
  {
    switch (event.kind) {
      case "message":
        receiveMessage(deps, company.id, account, event);
        break;
      case "status":
        applyProviderStatus(deps, account.id, event, unknown);
        break;
      case "watermark": {
        const contact = findContact(deps, company.id, account, event.from.value);
        if (contact) applyWatermark(deps, { accountId: account.id, contactId: contact, status: event.status, watermark: event.watermark });
        break;
      }
      case "blocked": {
        const contact = findContact(deps, company.id, account, event.from.value);
        // A block removes consent on the channel; an unblock does not grant it (consent must be explicit).
        if (contact && event.blocked)
          setConsent({ db: deps.db, events: deps.events, now: deps.now, companyId: company.id, contactId: contact, channels: [account.channel], status: "opted_out", source: "provider" });
        break;
      }
    }
  }
}

function findContact(deps: Deps, companyId: string, account: ChannelAccount, value: string): string | undefined {
  const found = findOrCreateContactByIdentity({ db: deps.db, events: deps.events, now: deps.now, companyId, channel: account.channel, value, create: false });
  return found?.contact.id;
}

function receiveMessage(deps: Deps, companyId: string, account: ChannelAccount, event: Extract<InboundEvent, { kind: "message" }>): void {
  const { db, events, now } = deps;
  // No savepoint of its own: its callers (a group-commit item, a scheduled report's db.attempt) undo it.
  db.within(() => {
    if (repo.messageIdByProviderId(db, account.id, event.providerMessageId)) return; // a duplicate delivery
    const found = findOrCreateContactByIdentity({
      db,
      events,
      now,
      companyId,
      channel: account.channel,
      value: event.from.value,
      displayName: event.from.displayName,
      username: event.from.username,
      create: true,
    })!;
    const contactId = found.contact.id;
    const conversationId = conversationForInbound({ db, events, now, companyId, contactId, channel: account.channel, channelAccountId: account.id });
    recordInbound({ db, now, companyId, contactId, channelAccountId: account.id, timestamp: event.timestamp, conversationRef: event.conversationRef });

    let replyTo: string | null = null;
    if (event.inReplyTo)
      replyTo = repo.messageIdByProviderId(db, account.id, event.inReplyTo) ?? null;

    const at = now();
    const { type, ...content } = event.content;
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
    repo.insertMessage(db, row);
    touchConversation({ db, conversationId, messageId: row.id, at });
    events.emit({ companyId, type: "message.received", data: { message: messageView(row) } });

    const text = event.content.type === "text" ? event.content.text.trim().toLowerCase() : "";
    // Telegram's Start button sends "/start" (or "/start <payload>" from a deep link): it counts as "start",
    // since it is how a user who blocked the bot comes back — else the consent the block removed could never
    // be restored by the user. (Other bot commands such as /cancel are dialogue, not consent.)
    const keyword = /^\/start(?:@\w+)?(?:\s+\S+)?$/.test(text) ? "start" : text;
    const consent = OPT_OUT.has(keyword) ? "opted_out" : OPT_IN.has(keyword) ? "opted_in" : null;
    if (consent && getConsent({ db, companyId, contactId, channel: account.channel }) !== consent)
      setConsent({ db, events, now, companyId, contactId, channels: [account.channel], status: consent, source: "inbound_keyword" });
  });
}
