/**
 * Sending messages: the single-message reads, and acceptance — every seed rule for POST /messages in order
 * (request rules: messages.request.ts; account; template; content; recipient; verdict: messages.verdict.ts;
 * quota: messages.quota.ts; price: billing.prices.ts) and the write of the accepted message. What happens
 * after lives beside it: dispatch (messages.dispatch.ts), the status lifecycle (messages.lifecycle.ts), the
 * provider's reports (messages.reports.ts). Rules come from the channel rules table (channels/channel.rules.ts);
 * no channel names are tested here.
 *
 * Acceptance is one unit of work (the route's idem.batch): contact (maybe created), conversation, message,
 * ledger debit, dispatch job, events and the Idempotency-Key record commit together or not at all.
 *
 * The asynchronous store contract (issue 35, DESIGN §15): the send path awaits its stores; nothing here reads
 * or writes storage synchronously.
 */
import { CHANNEL_RULES, type MessageType } from "../../channels/channel.rules";
import type { Channel } from "../../channels/channel.types";
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { MessagesNeeds } from "./messages.needs";
import { AppError, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { priceOf } from "../billing/billing.prices";
import { findOrCreateContactByIdentity } from "../contacts/contacts.service";
import { accountsOf } from "../channels-api/channel-accounts";
import { findOpenConversation, openConversation, touchConversation } from "../conversations/conversations.service";
import { mediaRef } from "../media/media.service";
import { resolveTemplateForSend, type TemplateRow } from "../templates/templates.service";
import type { SendMessageInput } from "./messages.model";
import { BULK_DISPATCH_JOB, DISPATCH_JOB, SCHEDULED_SEND_JOB } from "./messages.jobs";
import { checkDailyLimit } from "./messages.quota";
import { messagesStore, type MessageRow } from "./messages.repository";
import { checkRequest } from "./messages.request";
import { lookUpSendFacts, refusal, sendVerdict } from "./messages.verdict";
import { newMessageRow } from "./messages.views";

export async function getMessage({ db, companyId, id }: { db: MessagesNeeds["db"]; companyId: string; id: string }): Promise<MessageRow> {
  const m = await messagesStore(db).messageOfCompany(companyId, id);
  if (!m) throw notFound("message");
  return m;
}

/**
 * A conversation's messages, newest first (GET /conversations/{id}/messages).
 */
export async function listConversationMessages({
  db,
  conversationId,
  limit,
  before,
}: {
  db: MessagesNeeds["db"];
  conversationId: string;
  limit: number;
  before?: string;
}): Promise<MessageRow[]> {
  return await messagesStore(db).conversationMessages({ conversationId, limit, before });
}

/** The message, if any, of this company (a conversation's last message). */
export async function findMessage({ db, companyId, id }: { db: MessagesNeeds["db"]; companyId: string; id: string }): Promise<MessageRow | undefined> {
  return await messagesStore(db).messageOfCompany(companyId, id);
}

/** How many messages (both directions) these conversations hold. */
export async function countConversationMessages({ db, conversationIds }: { db: MessagesNeeds["db"]; conversationIds: string[] }): Promise<number> {
  return await messagesStore(db).countInConversations(conversationIds);
}

/** True when the contact has written exactly one message so far (the one being handled) on any account. */
export async function isFirstInbound({ db, conversationIds }: { db: MessagesNeeds["db"]; conversationIds: string[] }): Promise<boolean> {
  return (await messagesStore(db).countInboundIn(conversationIds, 2)) === 1;
}

/** The id of a queued or scheduled message that will still send this stored media (DELETE /media/{id} → 409 MEDIA_IN_USE). */
export async function queuedMessageUsingMedia({
  db,
  companyId,
  mediaId,
}: {
  db: MessagesNeeds["db"];
  companyId: string;
  mediaId: string;
}): Promise<string | undefined> {
  return await messagesStore(db).queuedMessageWithMedia({ companyId, mediaId, dueJob: SCHEDULED_SEND_JOB });
}

// ------------------------------------------------------------------ send

/** The seed's channelAccountId rule. */
async function pickAccount(deps: MessagesNeeds, companyId: string, input: SendMessageInput): Promise<AccountRuntime> {
  const accounts = await accountsOf(deps, companyId, input.channel);
  if (input.channelAccountId) {
    const chosen = accounts.find((a) => a.account.id === input.channelAccountId);
    if (!chosen)
      throw new AppError("VALIDATION_FAILED", `No ${input.channel} account ${input.channelAccountId}`, [
        { pointer: "/channelAccountId", message: `not a ${input.channel} account of this company (GET /channels)` },
      ]);
    if (input.channel !== "email" && !chosen.account.isDefault)
      throw new AppError("VALIDATION_FAILED", `Only the default ${input.channel} account may be used`, [
        { pointer: "/channelAccountId", message: "not the default account of this channel" },
      ]);
    return chosen;
  }
  if (!accounts.length)
    throw new AppError("CHANNEL_ACCOUNT_MISSING", `The company has no ${input.channel} account`, [
      { pointer: "/channel", message: "no account on this channel" },
    ]);
  if (input.channel === "email" && accounts.length > 1)
    throw new AppError("CHANNEL_ACCOUNT_MISSING", "The company has several email accounts; give channelAccountId", [
      { pointer: "/channelAccountId", message: "required: several email accounts" },
    ]);
  const def = accounts.find((a) => a.account.isDefault) ?? (accounts.length === 1 ? accounts[0] : undefined);
  if (!def)
    throw new AppError("CHANNEL_ACCOUNT_MISSING", `No default ${input.channel} account`, [
      { pointer: "/channelAccountId", message: "required: no default account" },
    ]);
  return def;
}

/** The recipient's contact, the address the message goes to, and its send facts (sendVerdict's). */
async function resolveRecipient(deps: MessagesNeeds, companyId: string, channelAccountId: string, input: SendMessageInput) {
  const { db, events, now } = deps;
  const channel = input.channel;
  // The contact's open conversation is read beside its send facts (on PostgreSQL one round trip for all of them):
  // the message goes into it if the verdict lets it go.
  const withConversation = async <T>(contactId: string, facts: Promise<T>) => {
    const [f, openConversationId] = await Promise.all([facts, findOpenConversation({ db, contactId, channelAccountId })]);
    return { ...f, openConversationId };
  };
  if (input.to.contactId) {
    const contactId = input.to.contactId;
    const { facts, lastInboundAt, openConversationId } = await withConversation(
      contactId,
      lookUpSendFacts(deps, { companyId, contactId, channel, channelAccountId }),
    );
    if (!facts) throw notFound("contact");
    if (!facts.identity)
      throw new AppError("VALIDATION_FAILED", `The contact has no ${input.channel} identity`, [
        { pointer: "/to/contactId", message: `no ${input.channel} identity` },
      ]);
    return { contactId, address: facts.identity.value, facts, lastInboundAt, openConversationId };
  }
  const field = CHANNEL_RULES[input.channel].address;
  const value = input.to[field]!;
  let found;
  try {
    found = await findOrCreateContactByIdentity({ db, events, now, companyId, channel: input.channel, value, create: input.createContact ?? true });
  } catch (e) {
    // The contacts service points at /value; the caller wrote /to/<field>.
    if (e instanceof AppError && e.code === "VALIDATION_FAILED")
      throw new AppError(
        "VALIDATION_FAILED",
        e.message,
        e.details.map((d) => ({ ...d, pointer: `/to/${field}` })),
      );
    throw e;
  }
  if (!found)
    throw new AppError("NOT_FOUND", `No contact with this ${field} (createContact is false)`, [{ pointer: `/to/${field}`, message: "unknown recipient" }]);
  // The facts of the identity addressed (`to`), which is also where the message goes.
  const contactId = found.contact.id;
  const { facts, lastInboundAt, openConversationId } = await withConversation(
    contactId,
    lookUpSendFacts(deps, { companyId, contactId, channel, channelAccountId, known: { contact: found.contact, identity: found.identity } }),
  );
  // (A contact created by this send has no conversation yet: its read found none, and openConversation opens one.)
  return { contactId, address: found.identity.value, facts, lastInboundAt, openConversationId };
}

/**
 * Accepts a message: the whole POST /messages rule set, in the caller's unit of work (the route's idem.batch).
 * Throws AppError for every refusal (422/402/404/429), changing nothing.
 */
export async function sendMessage(
  deps: MessagesNeeds,
  { companyId, apiKeyId, input }: { companyId: string; apiKeyId: string | null; input: SendMessageInput },
): Promise<MessageRow> {
  checkRequest(input, deps.outbound, deps.now());
  const { db } = deps;
  // Its only caller (the route, through idem.batch) runs it as a group-commit item: a refusal rolls back there.
  return db.join(async () => {
    const runtime = await pickAccount(deps, companyId, input);
    const accountId = runtime.account.id;
    let template: TemplateRow | null = null;
    if (input.type === "template") template = await resolveTemplateForSend({ db, companyId, channelAccountId: accountId, ref: input.template! });

    let content: Record<string, unknown>;
    switch (input.type) {
      case "text":
        content = { text: input.text };
        break;
      case "media":
        content = {
          media: {
            url: input.media!.url,
            file: input.media!.mediaId ? await mediaRef(deps, companyId, input.media!.mediaId, "/media/mediaId", runtime) : undefined,
            caption: input.media!.caption,
          },
        };
        break;
      case "template":
        content = {
          template: {
            id: template!.id,
            name: template!.name,
            language: template!.language,
            params: input.template!.params ?? {},
            headerMedia: input.template!.headerMediaId
              ? { file: await mediaRef(deps, companyId, input.template!.headerMediaId, "/template/headerMediaId", runtime) }
              : input.template!.headerMediaUrl
                ? { url: input.template!.headerMediaUrl }
                : undefined,
          },
        };
        break;
      case "email":
        content = { email: input.email };
        break;
      case "interactive":
        content = { interactive: input.interactive };
        break;
    }

    let replyTo: MessageRow | undefined;
    if (input.replyToMessageId) {
      replyTo = await messagesStore(db).messageOfCompany(companyId, input.replyToMessageId);
      if (!replyTo) throw new AppError("VALIDATION_FAILED", "No such message to reply to", [{ pointer: "/replyToMessageId", message: "unknown message" }]);
    }

    const recipient = await resolveRecipient(deps, companyId, accountId, input);
    const { contactId, address } = recipient;
    const { verdict, lastInboundAt } = await sendVerdict(deps, {
      companyId,
      contactId,
      channel: input.channel,
      channelAccountId: accountId,
      type: input.type,
      purpose: "direct",
      facts: recipient.facts,
      lastInboundAt: recipient.lastInboundAt,
    });
    if (!verdict.ok) throw refusal(verdict, { channel: input.channel, lastInboundAt });
    await checkDailyLimit(deps, runtime);

    const hasHeaderMedia = Boolean((content.template as { headerMedia?: unknown } | undefined)?.headerMedia);
    return await createOutboundMessage(deps, {
      companyId,
      contactId,
      address,
      channel: input.channel,
      channelAccountId: accountId,
      type: input.type,
      content,
      price: priceOf(deps, input.channel, input.type, template, hasHeaderMedia),
      metadata: input.metadata ?? {},
      templateId: template?.id ?? null,
      replyToMessageId: replyTo?.id ?? null,
      apiKeyId,
      scheduledAt: input.scheduledAt !== undefined ? new Date(input.scheduledAt) : undefined,
      openConversationId: recipient.openConversationId,
    });
  });
}

/**
 * Writes an accepted outbound message: the contact's open conversation, the message row and its dispatch job,
 * and last the ledger debit (402 INSUFFICIENT_BALANCE when the balance would go negative). The caller has checked
 * eligibility. `bulk` messages (campaigns) are dispatched by their own job type, so a campaign's backlog
 * never queues ahead of one-to-one sends. Joins the caller's unit of work.
 */
export async function createOutboundMessage(
  deps: Pick<MessagesNeeds, "db" | "events" | "now" | "ledger" | "queue">,
  m: {
    companyId: string;
    contactId: string;
    address: string;
    channel: Channel;
    channelAccountId: string;
    type: MessageType;
    content: Record<string, unknown>;
    price: { priceType: string; unitPrice: number };
    metadata: Record<string, string>;
    templateId: string | null;
    replyToMessageId?: string | null;
    apiKeyId: string | null;
    campaignId?: string;
    /** Send later (DESIGN §18): the message waits as `scheduled` for its due job (messages.scheduled.ts). */
    scheduledAt?: Date;
    /** The contact's open conversation on the account, when the caller read it in this unit (null: none). */
    openConversationId?: string | null;
  },
): Promise<MessageRow> {
  const { db, events, now } = deps;
  // Joins the caller's unit: a caller that catches a throw and goes on (the campaign engine, on a 402)
  // wraps the call in a unit of its own (a savepoint).
  return db.join(async () => {
    const id = newId();
    const { priceType, unitPrice } = m.price;
    const conversationId = await openConversation({
      db,
      events,
      now,
      companyId: m.companyId,
      contactId: m.contactId,
      channel: m.channel,
      channelAccountId: m.channelAccountId,
      found: m.openConversationId,
    });
    const at = now();
    let lease = null as { token: string | null; until: number } | null;
    if (m.scheduledAt)
      // Outbox: the due job exists iff the message does. An ordinary (durable) jobs row, so one that fell due
      // while the appliance was down runs at start-up; the dispatch job is enqueued only when it is due.
      await deps.queue.enqueueJob({ type: SCHEDULED_SEND_JOB, payload: { messageId: id }, runAt: m.scheduledAt });
    // The message row is its dispatch job: due now, or already held by a worker with room (no jobs row).
    else
      await deps.queue.enqueueJob({
        type: m.campaignId ? BULK_DISPATCH_JOB : DISPATCH_JOB,
        payload: { messageId: id },
        groupKey: m.channelAccountId,
        hold: (l) => (lease = l),
      });
    const row = newMessageRow({
      id,
      companyId: m.companyId,
      conversationId,
      contactId: m.contactId,
      channel: m.channel,
      channelAccountId: m.channelAccountId,
      direction: "outbound",
      type: m.type,
      content: m.content,
      address: m.address,
      status: m.scheduledAt ? "scheduled" : "queued",
      scheduledAt: m.scheduledAt ?? null,
      priceType,
      unitPrice,
      charged: unitPrice > 0,
      metadata: m.metadata,
      templateId: m.templateId,
      replyToMessageId: m.replyToMessageId ?? null,
      createdAt: at,
      apiKeyId: m.apiKeyId,
      campaignId: m.campaignId ?? null,
      leaseUntil: lease?.until ?? null,
      leaseToken: lease?.token ?? null,
    });
    // The three writes go out together: on PostgreSQL one round trip (pipelined on the unit's connection) where
    // one after another took three. None needs another's result, and a throw of any undoes the unit.
    // NB! The conversation's row, then the company's balance row, last: each stays locked until the unit
    // commits, and on PostgreSQL every other send to the contact or of the company (on any instance) waits for
    // it — the fewer statements after them, the shorter the wait. In a shared group (POST /messages) they run
    // after all of the group's sends, in that order for every group (db.atEnd): no two groups wait for each
    // other's rows in a cycle. A 402 here undoes the unit's writes with it.
    await Promise.all([
      // Held back as well in a shared group: then the group's inserts go out in the same round trip as its
      // locking writes and take no round trip of their own (nothing in the unit reads the row before COMMIT).
      db.atEnd(`0 message ${id}`, () => messagesStore(db).insertMessage(row)),
      // A send by an API key outside a campaign is an agent's reply: it reads what the contact wrote.
      db.atEnd(`1 conversation ${conversationId}`, () =>
        touchConversation({ db, conversationId, messageId: id, at, unread: m.apiKeyId && !m.campaignId ? "reply" : null }),
      ),
      unitPrice > 0 &&
        db.atEnd(`2 balance ${m.companyId}`, () =>
          deps.ledger.debit({ companyId: m.companyId, amount: unitPrice, messageId: id, description: `${priceType} message` }),
        ),
    ]);
    return row;
  });
}
