/**
 * Sending messages: every seed rule for POST /messages, billing at acceptance, the status lifecycle and
 * the dispatch job. Rules come from the channel rules table (channels/channel.rules.ts); no channel names
 * are tested here.
 *
 * Acceptance is one unit of work (the route's idem.batch): contact (maybe created), conversation, message,
 * ledger debit, dispatch job, events and the Idempotency-Key record commit together or not at all.
 *
 * The asynchronous store contract (issue 35, DESIGN §15): the send path, inbound application and the reports
 * await their stores; nothing here reads or writes storage synchronously.
 */
import { eligibility, type Verdict } from "../../channels/channel.eligibility";
import { CHANNEL_RULES, FREE_PRICE_TYPE, METADATA_LIMITS, type MessageType } from "../../channels/channel.rules";
import type { OutboundPolicy } from "../../platform/outbound/outbound.policy";
import type { Channel, FailureReason, InboundEvent, OutboundContent, OutboundMessage, SendResult, StoredMedia } from "../../channels/channel.types";
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { Deps } from "../../deps";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { formatMicros, parseMicros } from "../../platform/money";
import type { Job, JobOutcome } from "../../platform/queue/queue";
import { defaultBackoffMs } from "../../platform/queue/queue";
import { writeBehind } from "../../db/write-behind";
import { contactSendFacts, findOrCreateContactByIdentity, setConsent } from "../contacts/contacts.service";
import { accountsOf } from "../channels-api/channel-accounts";
import { channelState, conversationsOfContactOn, openConversation, touchConversation } from "../conversations/conversations.service";
import { findStoredMedia, holdMediaForUse, rememberProviderMediaId } from "../media/media.service";
import { getTemplateById, hasMediaHeader, renderTemplate, resolveTemplateForSend, type TemplateRow } from "../templates/templates.service";
import { unsubscribeFor, type UnsubscribeLinks } from "../unsubscribe/unsubscribe.module";
import { INTERACTIVE_LIMITS, SCHEDULE_LIMITS, type MessageRecord, type SendMessageInput } from "./messages.model";
import { messagesStore, type DispatchRow, type MessageHead, type MessageRow } from "./messages.repository";
import { DISPATCH_JOBS } from "./messages.table";

export type { MessageRow };
export const DISPATCH_JOB = DISPATCH_JOBS.direct;
/** Dispatch of campaign messages: the same handler, its own workers (DESIGN §10: one-to-one sends are never starved). */
export const BULK_DISPATCH_JOB = DISPATCH_JOBS.bulk;
/** Status reports applied later (messages.wire.ts): the sandbox's scheduled delivered/read, and provider reports that overtook our commit of the send. */
export const SCHEDULED_INBOUND_JOB = "channel.inbound.scheduled";
/** A message sent later falls due (messages.scheduled.ts): eligibility again, then its dispatch job — or failed and refunded. */
export const SCHEDULED_SEND_JOB = "message.scheduled";
const STATUS_ORDER: Record<string, number> = { queued: 0, sent: 1, delivered: 2, read: 3 };

// ------------------------------------------------------------------ views

const iso = (d: Date | null | undefined) => d?.toISOString() ?? null;

/** Stored as text; the values are the closed sets of messages.model.ts. */
type MessageStatus = (typeof MessageRecord.static)["status"];
type PriceType = (typeof MessageRecord.static)["priceType"];

export function messageView(m: MessageRow) {
  return {
    id: m.id,
    status: m.status as MessageStatus,
    direction: m.direction as "outbound" | "inbound",
    conversationId: m.conversationId,
    contactId: m.contactId,
    channel: m.channel as Channel,
    channelAccountId: m.channelAccountId,
    type: m.type,
    content: m.content,
    address: m.address,
    priceType: m.priceType as PriceType,
    unitPrice: formatMicros(m.unitPrice),
    charged: m.charged,
    refunded: m.refunded,
    metadata: m.metadata,
    templateId: m.templateId,
    replyToMessageId: m.replyToMessageId,
    providerMessageId: m.providerMessageId,
    campaignId: m.campaignId,
    error: m.errorReason ? { code: m.errorCode ?? m.errorReason, reason: m.errorReason as FailureReason, message: m.errorMessage ?? "" } : null,
    scheduledAt: iso(m.scheduledAt),
    statusTimes: {
      queuedAt: queuedAt(m),
      sentAt: iso(m.sentAt),
      deliveredAt: iso(m.deliveredAt),
      readAt: iso(m.readAt),
      failedAt: iso(m.failedAt),
      receivedAt: m.direction === "inbound" ? iso(m.providerTimestamp ?? m.createdAt) : null,
    },
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

/** A message sent at once was queued at acceptance; one sent later when it fell due (never, while scheduled or canceled). */
function queuedAt(m: MessageRow): string | null {
  if (m.direction !== "outbound") return null;
  if (!m.scheduledAt) return iso(m.createdAt);
  return m.status === "scheduled" || m.status === "canceled" ? null : iso(m.scheduledAt);
}

/** The seed's Message (POST /messages): exactly these fields. */
export function acceptedView(m: MessageRow) {
  return {
    id: m.id,
    status: m.status as MessageStatus,
    conversationId: m.conversationId,
    contactId: m.contactId,
    channel: m.channel as Channel,
    priceType: m.priceType,
    unitPrice: formatMicros(m.unitPrice),
    charged: m.charged,
    metadata: m.metadata,
  };
}

type MessageFields = Pick<
  MessageRow,
  "id" | "companyId" | "conversationId" | "contactId" | "channel" | "channelAccountId" | "direction" | "type" | "content" | "address" | "status" | "createdAt"
> &
  Partial<MessageRow>;

/** A new message row: the given fields, everything else at its starting value (free, no status times). */
export function newMessageRow(f: MessageFields): MessageRow {
  return {
    priceType: FREE_PRICE_TYPE,
    unitPrice: 0,
    charged: false,
    refunded: false,
    metadata: {},
    templateId: null,
    replyToMessageId: null,
    providerMessageId: null,
    errorCode: null,
    errorReason: null,
    errorMessage: null,
    providerTimestamp: null,
    sentAt: null,
    deliveredAt: null,
    readAt: null,
    failedAt: null,
    updatedAt: f.createdAt,
    apiKeyId: null,
    campaignId: null,
    leaseUntil: null,
    leaseToken: null,
    scheduledAt: null,
    ...f,
  };
}

export async function getMessage({ db, companyId, id }: { db: Deps["db"]; companyId: string; id: string }): Promise<MessageRow> {
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
  db: Deps["db"];
  conversationId: string;
  limit: number;
  before?: string;
}): Promise<MessageRow[]> {
  return await messagesStore(db).conversationMessages({ conversationId, limit, before });
}

/** The message, if any, of this company (a conversation's last message). */
export async function findMessage({ db, companyId, id }: { db: Deps["db"]; companyId: string; id: string }): Promise<MessageRow | undefined> {
  return await messagesStore(db).messageOfCompany(companyId, id);
}

/** How many messages (both directions) these conversations hold. */
export async function countConversationMessages({ db, conversationIds }: { db: Deps["db"]; conversationIds: string[] }): Promise<number> {
  return await messagesStore(db).countInConversations(conversationIds);
}

/** True when the contact has written exactly one message so far (the one being handled) on any account. */
export async function isFirstInbound({ db, conversationIds }: { db: Deps["db"]; conversationIds: string[] }): Promise<boolean> {
  return (await messagesStore(db).countInboundIn(conversationIds, 2)) === 1;
}

/** The id of a queued or scheduled message that will still send this stored media (DELETE /media/{id} → 409 MEDIA_IN_USE). */
export async function queuedMessageUsingMedia({ db, companyId, mediaId }: { db: Deps["db"]; companyId: string; mediaId: string }): Promise<string | undefined> {
  return await messagesStore(db).queuedMessageWithMedia({ companyId, mediaId, dueJob: SCHEDULED_SEND_JOB });
}

// ------------------------------------------------------------------ request rules

/** Every problem of the request body at once (422 VALIDATION_FAILED), before anything is looked up. */
function checkRequest(input: SendMessageInput, outbound: OutboundPolicy, now: Date): void {
  const rule = CHANNEL_RULES[input.channel];
  const p = new DetailCollector();
  if (input.scheduledAt !== undefined) {
    const problem = scheduleProblem(input.scheduledAt, now);
    if (problem) p.add("/scheduledAt", problem);
  }
  if (!rule.types.includes(input.type))
    p.add("/type", input.type === "email" ? "type email is allowed only with channel email" : `type ${input.type} is not available on ${input.channel}`);

  if (input.type === "interactive" && !rule.types.includes("interactive"))
    throw new AppError("CHANNEL_UNSUPPORTED", `Interactive messages are not available on ${input.channel}`, [
      { pointer: "/channel", message: `${input.channel} has no buttons nor lists; send type text instead` },
    ]);
  const contentFields = ["text", "media", "template", "email", "interactive"] as const;
  for (const f of contentFields) if (f !== input.type && input[f] !== undefined) p.add(`/${f}`, `not allowed with type ${input.type}`);
  if (input.type === "text") {
    if (input.text === undefined) p.add("/text", "required for type text");
    else if (rule.textLimit !== null && [...input.text].length > rule.textLimit) p.add("/text", `at most ${rule.textLimit} characters on ${input.channel}`);
  }
  if (input.type === "media") {
    if (!input.media) p.add("/media", "required for type media");
    else {
      if ((input.media.mediaId === undefined) === (input.media.url === undefined)) p.add("/media", "give exactly one of mediaId or url");
      // No DNS here: the guarded fetcher checks the resolved addresses again when (and if) the URL is fetched.
      const problem = input.media.url !== undefined ? outbound.staticProblem(input.media.url) : null;
      if (problem) p.add("/media/url", `URL not allowed: ${problem}`);
      if (input.media.caption && rule.textLimit !== null && [...input.media.caption].length > rule.textLimit)
        p.add("/media/caption", `at most ${rule.textLimit} characters`);
    }
  }
  if (input.type === "template") {
    if (!input.template) p.add("/template", "required for type template");
    else {
      if ((input.template.templateId === undefined) === (input.template.name === undefined)) p.add("/template", "give exactly one of templateId or name");
      if (input.template.headerMediaId && input.template.headerMediaUrl)
        p.add("/template/headerMediaId", "give at most one of headerMediaId or headerMediaUrl");
      const problem = input.template.headerMediaUrl !== undefined ? outbound.staticProblem(input.template.headerMediaUrl) : null;
      if (problem) p.add("/template/headerMediaUrl", `URL not allowed: ${problem}`);
    }
  }
  if (input.type === "interactive") {
    if (!input.interactive) p.add("/interactive", "required for type interactive");
    else checkInteractive(input.channel, input.interactive, p);
  }
  if (input.type === "email") {
    if (!input.email) p.add("/email", "required for type email");
    else if (input.email.html === undefined && input.email.text === undefined) p.add("/email", "give html or text");
  }

  const to = input.to;
  if (!to.contactId && !to.phone && !to.email && !to.handle) p.add("/to", "give at least one of contactId, phone, email, handle");
  if (!to.contactId) {
    const wanted = rule.address;
    for (const f of ["phone", "email", "handle"] as const)
      if (to[f] !== undefined && f !== wanted) p.add(`/to/${f}`, `${input.channel} recipients are addressed by ${wanted} or contactId`);
  }

  const meta = input.metadata ?? {};
  const keys = Object.keys(meta);
  if (keys.length > METADATA_LIMITS.maxKeys) p.add("/metadata", `at most ${METADATA_LIMITS.maxKeys} keys`);
  for (const k of keys) {
    if (k.length > METADATA_LIMITS.maxKeyLength) p.add(`/metadata/${k}`, `key longer than ${METADATA_LIMITS.maxKeyLength} characters`);
    if ((meta[k] ?? "").length > METADATA_LIMITS.maxValueLength) p.add(`/metadata/${k}`, `value longer than ${METADATA_LIMITS.maxValueLength} characters`);
  }
  p.throwIfAny();
}

/**
 * RFC 3339 date-time with its offset (`Z` or `±hh:mm`): a time without one would be read in the appliance's
 * own zone, which the caller cannot see.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Why `scheduledAt` cannot be used (DESIGN §18), or null. */
function scheduleProblem(text: string, now: Date): string | null {
  const at = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return "not an RFC 3339 date-time with an offset (e.g. 2026-06-02T10:00:00+03:00)";
  if (at <= now.getTime()) return `in the past (now is ${now.toISOString()})`;
  if (at > now.getTime() + SCHEDULE_LIMITS.maxDays * 86_400_000) return `more than ${SCHEDULE_LIMITS.maxDays} days ahead`;
  return null;
}

/** DESIGN §16's limits, each with its pointer; a channel's own id limit (Telegram's callback_data) from the rules table. */
function checkInteractive(channel: Channel, i: NonNullable<SendMessageInput["interactive"]>, p: DetailCollector): void {
  const { textLimit, interactiveIdBytes, sectionTitlesWhenSeveral } = CHANNEL_RULES[channel];
  const L = INTERACTIVE_LIMITS;
  const len = (s: string) => [...s].length;
  const checkId = (id: string, pointer: string) => {
    if (len(id) > L.id) p.add(pointer, `at most ${L.id} characters`);
    else if (interactiveIdBytes !== null && Buffer.byteLength(id) > interactiveIdBytes) p.add(pointer, `at most ${interactiveIdBytes} bytes on ${channel}`);
  };
  if (textLimit !== null && len(i.body.text) > textLimit) p.add("/interactive/body/text", `at most ${textLimit} characters on ${channel}`);
  if (i.header && len(i.header.text) > L.headerFooter) p.add("/interactive/header/text", `at most ${L.headerFooter} characters`);
  if (i.footer && len(i.footer.text) > L.headerFooter) p.add("/interactive/footer/text", `at most ${L.headerFooter} characters`);
  const ids = new Set<string>();
  const unique = (id: string, pointer: string) => {
    if (ids.has(id)) p.add(pointer, "ids must be unique");
    ids.add(id);
  };
  if (i.kind === "buttons") {
    if (!i.buttons) {
      p.add("/interactive/buttons", "required for kind buttons");
      return;
    }
    if (i.list) p.add("/interactive/list", "not allowed with kind buttons");
    const buttons = i.buttons;
    if (buttons.length < L.buttons.min || buttons.length > L.buttons.max) p.add("/interactive/buttons", `${L.buttons.min} to ${L.buttons.max} buttons`);
    buttons.forEach((b, n) => {
      if (len(b.title) > L.buttonTitle) p.add(`/interactive/buttons/${n}/title`, `at most ${L.buttonTitle} characters`);
      checkId(b.id, `/interactive/buttons/${n}/id`);
      unique(b.id, `/interactive/buttons/${n}/id`);
    });
    return;
  }
  if (!i.list) {
    p.add("/interactive/list", "required for kind list");
    return;
  }
  if (i.buttons) p.add("/interactive/buttons", "not allowed with kind list");
  if (len(i.list.button) > L.listButton) p.add("/interactive/list/button", `at most ${L.listButton} characters`);
  const rows = i.list.sections.reduce((n, s) => n + s.rows.length, 0);
  if (rows < L.rows.min || rows > L.rows.max) p.add("/interactive/list/sections", `${L.rows.min} to ${L.rows.max} rows in all sections together`);
  i.list.sections.forEach((s, si) => {
    if (s.title === undefined && sectionTitlesWhenSeveral && i.list!.sections.length > 1)
      p.add(`/interactive/list/sections/${si}/title`, `required on ${channel} when the list has several sections`);
    if (s.title !== undefined && len(s.title) > L.rowTitle) p.add(`/interactive/list/sections/${si}/title`, `at most ${L.rowTitle} characters`);
    s.rows.forEach((r, ri) => {
      const at = `/interactive/list/sections/${si}/rows/${ri}`;
      if (len(r.title) > L.rowTitle) p.add(`${at}/title`, `at most ${L.rowTitle} characters`);
      if (r.description !== undefined && len(r.description) > L.rowDescription) p.add(`${at}/description`, `at most ${L.rowDescription} characters`);
      checkId(r.id, `${at}/id`);
      unique(r.id, `${at}/id`);
    });
  });
}

/** The seed's channelAccountId rule. */
async function pickAccount(deps: Deps, companyId: string, input: SendMessageInput): Promise<AccountRuntime> {
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

async function resolveRecipient(deps: Deps, companyId: string, input: SendMessageInput) {
  const { db, events, now } = deps;
  if (input.to.contactId) {
    const facts = await contactSendFacts({ db, companyId, contactId: input.to.contactId, channel: input.channel });
    if (!facts) throw notFound("contact");
    if (!facts.identity)
      throw new AppError("VALIDATION_FAILED", `The contact has no ${input.channel} identity`, [
        { pointer: "/to/contactId", message: `no ${input.channel} identity` },
      ]);
    return { contactId: input.to.contactId, address: facts.identity.value, facts };
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
  const facts = await contactSendFacts({
    db,
    companyId,
    contactId: found.contact.id,
    channel: input.channel,
    contact: found.contact,
    identity: found.identity,
  });
  return { contactId: found.contact.id, address: found.identity.value, facts };
}

/** POST /messages' HTTP error for an eligibility refusal (channel.eligibility.ts decides; this only words it). */
export function refusal(verdict: Extract<Verdict, { ok: false }>, { channel, lastInboundAt }: { channel: Channel; lastInboundAt: Date | null }): AppError {
  const rule = CHANNEL_RULES[channel];
  switch (verdict.reason) {
    case "noIdentity":
      return new AppError("VALIDATION_FAILED", `The contact has no ${channel} identity`, [{ pointer: "/to", message: `no ${channel} identity` }]);
    case "blocked":
      return new AppError("CONTACT_BLOCKED", "The contact is blocked", [{ pointer: "/to", message: "blocked contact" }]);
    case "noConsent":
      return new AppError("CONTACT_BLOCKED", `The contact opted out of ${channel}`, [{ pointer: "/to", message: `opted out of ${channel}` }]);
  }
  const window = rule.window;
  if (window.kind !== "since_last_inbound")
    return new AppError("MESSAGING_WINDOW_CLOSED", `On ${channel} the contact must have written to this account first`, [
      { pointer: "/to", message: "no prior conversation with this account" },
    ]);
  const hint = rule.types.includes("template") && !window.appliesTo.includes("template") ? "; send an approved template instead" : "";
  const closesAt = lastInboundAt ? new Date(lastInboundAt.getTime() + window.hours * 3_600_000) : null;
  return new AppError(
    "MESSAGING_WINDOW_CLOSED",
    closesAt
      ? `The ${window.hours} h window closed at ${closesAt.toISOString()}${hint}`
      : `The contact has not written to this account; the ${window.hours} h window is closed${hint}`,
    [{ pointer: "/type", message: "outside the messaging window" }],
  );
}

/** The eligibility facts of a contact on an account, looked up, and the verdict on them. */
export async function sendVerdict(
  deps: Pick<Deps, "db" | "now">,
  {
    companyId,
    contactId,
    channel,
    channelAccountId,
    type,
    purpose,
    facts,
  }: {
    companyId: string;
    contactId: string;
    channel: Channel;
    channelAccountId: string;
    type: MessageType;
    purpose: "direct" | "campaign";
    /** The contact's send facts when the caller looked them up in this transaction. */
    facts?: Awaited<ReturnType<typeof contactSendFacts>>;
  },
) {
  facts ??= await contactSendFacts({ db: deps.db, companyId, contactId, channel });
  const lastInboundAt = (await channelState({ db: deps.db, contactId, channelAccountId }))?.lastInboundAt ?? null;
  const verdict = eligibility({
    rule: CHANNEL_RULES[channel],
    identity: facts?.identity ?? null,
    blocked: facts?.blocked ?? false,
    consent: facts?.consent ?? "unknown",
    lastInboundAt,
    messageType: type,
    purpose,
    now: deps.now(),
  });
  return { verdict, lastInboundAt, address: facts?.identity?.value ?? null };
}

/**
 * The account's daily DM quota (X `daily_dm_limit`), counted over the current UTC day from our own sends;
 * null when the channel or account has none.
 */
export async function dailyDmQuota(deps: Pick<Deps, "db" | "now">, runtime: AccountRuntime): Promise<{ limit: number; used: number; resetsAt: Date } | null> {
  if (!CHANNEL_RULES[runtime.account.channel].dailyDmLimit) return null;
  const limit = Number(runtime.account.settings.daily_dm_limit ?? 0);
  if (!(limit > 0)) return null;
  const now = deps.now();
  const dayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const used = await messagesStore(deps.db).countOutboundSince(runtime.account.id, new Date(dayStart));
  return { limit, used, resetsAt: new Date(dayStart + 86_400_000) };
}

async function checkDailyLimit(deps: Deps, runtime: AccountRuntime): Promise<void> {
  const quota = await dailyDmQuota(deps, runtime);
  if (quota && quota.used >= quota.limit) {
    const retryAfter = Math.ceil((quota.resetsAt.getTime() - deps.now().getTime()) / 1000);
    throw new AppError("RATE_LIMITED", `The daily DM limit of ${quota.limit} for this account is reached; it resets at 00:00 UTC`, [], {
      "retry-after": String(retryAfter),
    });
  }
}

/** priceType and unit price (micros) of a message (billing by the channel rules' price table). */
export function priceOf(
  deps: Pick<Deps, "config">,
  channel: Channel,
  type: MessageType,
  template: TemplateRow | null,
  headerMedia: boolean,
): { priceType: string; unitPrice: number } {
  const price = CHANNEL_RULES[channel].price;
  const priceType =
    (type === "template" && (headerMedia || (template && hasMediaHeader(template))) ? price.templateWithMedia : undefined) ??
    price[type === "interactive" ? "text" : type];
  if (!priceType) return { priceType: FREE_PRICE_TYPE, unitPrice: 0 };
  return { priceType, unitPrice: pricesInMicros(deps.config.billing.prices as Record<string, string>).get(priceType) ?? 0 };
}

/** The config's price table in micros, parsed once per config (it was ~1 % of a POST /messages). */
const parsedPrices = new WeakMap<Record<string, string>, Map<string, number>>();
function pricesInMicros(prices: Record<string, string>): Map<string, number> {
  let parsed = parsedPrices.get(prices);
  if (!parsed) parsedPrices.set(prices, (parsed = new Map(Object.entries(prices).map(([k, text]) => [k, parseMicros(text) ?? 0]))));
  return parsed;
}

/** A stored file for a send; its type and size must be ones the account's adapter takes (else it would only fail later, MEDIA_INVALID). */
export async function mediaRef(deps: Pick<Deps, "db">, companyId: string, mediaId: string, pointer: string, runtime: AccountRuntime) {
  const m = await holdMediaForUse({ db: deps.db, companyId, mediaId });
  if (!m) throw new AppError("VALIDATION_FAILED", "No such media", [{ pointer, message: "unknown mediaId (POST /media)" }]);
  const max = runtime.adapter.capabilities.media[m.mimeType];
  if (max === undefined || m.size > max)
    throw new AppError("VALIDATION_FAILED", `This ${runtime.account.channel} account cannot send the stored file`, [
      {
        pointer,
        message:
          max === undefined
            ? `${m.mimeType} files are not accepted on this account`
            : `${m.size} bytes is over the ${max} byte limit for ${m.mimeType} on this account`,
      },
    ]);
  return { id: m.id, filename: m.filename, mimeType: m.mimeType, size: m.size };
}

/**
 * Accepts a message: the whole POST /messages rule set, in the caller's unit of work (the route's idem.batch).
 * Throws AppError for every refusal (422/402/404/429), changing nothing.
 */
export async function sendMessage(
  deps: Deps,
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

    const { contactId, address, facts } = await resolveRecipient(deps, companyId, input);
    const { verdict, lastInboundAt } = await sendVerdict(deps, {
      companyId,
      contactId,
      channel: input.channel,
      channelAccountId: accountId,
      type: input.type,
      purpose: "direct",
      facts,
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
  deps: Pick<Deps, "db" | "events" | "now" | "ledger" | "queue">,
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
    await messagesStore(db).insertMessage(row);
    // A send by an API key outside a campaign is an agent's reply: it reads what the contact wrote.
    await touchConversation({ db, conversationId, messageId: id, at, unread: m.apiKeyId && !m.campaignId ? "reply" : null });
    // NB! The debit last: it locks the company's balances row until the unit commits, and on PostgreSQL every
    // other send of the company (on any instance) waits for that row — the fewer statements after it, the
    // shorter the wait. A 402 here undoes the unit's writes above with it.
    if (unitPrice > 0) await deps.ledger.debit({ companyId: m.companyId, amount: unitPrice, messageId: id, description: `${priceType} message` });
    return row;
  });
}

// ------------------------------------------------------------------ status lifecycle

/**
 * Moves a message forward (queued → sent → delivered → read) or to failed (from queued or sent), storing
 * each status time and emitting one event per step. Late or duplicate reports never move it backwards;
 * a read report for a message not yet marked delivered emits delivered first. `fresh`: `message` was read
 * in the caller's current transaction, so it is not read again.
 *
 * NB! This is the only writer of a message row, and every write it makes moves the status (forward, or to
 * failed, which is final). So a message whose status is still the one read earlier is unchanged since: a
 * `message` read outside the transaction (the dispatch reads it before the provider call) is checked by
 * its status alone, and read again whole only if that moved.
 *
 * In the caller's unit when there is one (the dispatch's `writes()`, the inbound paths: each rolls back on a
 * throw), else a unit of its own.
 */
export async function applyStatus(
  deps: Deps,
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
    const current = fresh || (await store.messageStatus(message.id)) === message.status ? message : (await store.messageHead(message.id))!;
    const changes: Partial<MessageRow> = {};
    const steps: ("sent" | "delivered" | "read" | "failed")[] = [];
    if (status === "failed") {
      if (current.status !== "queued" && current.status !== "sent") return current;
      Object.assign(changes, {
        status: "failed",
        failedAt: at,
        errorReason: error?.reason ?? "PROVIDER_REJECTED",
        errorCode: error?.code ?? error?.reason ?? null,
        errorMessage: error?.message ?? null,
      });
      steps.push("failed");
      if (current.charged && !current.refunded && current.status === "queued") {
        await deps.ledger.refund({
          companyId: current.companyId,
          amount: current.unitPrice,
          messageId: current.id,
          description: "refund: message failed before sent",
        });
        changes.refunded = true;
      }
    } else {
      // NB! scheduled and canceled are outside STATUS_ORDER (they would read as queued): no report moves them.
      if (current.status === "failed" || current.status === "received" || current.status === "scheduled" || current.status === "canceled") return current;
      const from = STATUS_ORDER[current.status] ?? 0;
      const to = STATUS_ORDER[status]!;
      if (to <= from) return current;
      for (const s of ["sent", "delivered", "read"] as const) {
        const o = STATUS_ORDER[s]!;
        if (o > from && o <= to) {
          changes[`${s}At`] = at;
          steps.push(s);
        }
      }
      changes.status = status;
    }
    if (providerMessageId) changes.providerMessageId = providerMessageId;
    changes.updatedAt = now();
    await store.recordStatus(current.id, changes);
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

/**
 * Applies a provider status report (by provider message id) — from webhooks, polling or sandbox timers.
 * A report on a message not stored (yet) is deferred to a job of its own, or, given `unknown`, left there
 * for the caller to retry (a scheduled report's job comes back itself).
 */
export async function applyProviderStatus(
  deps: Deps,
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
const keptReports = new WeakMap<Deps["db"], ReturnType<typeof writeBehind<Schedule>>>();

/**
 * Stores reports a provider will make later (SendResult.reports) as inline jobs that apply each at its time
 * (messages.wire.ts). Call inside the transaction that records the send. Kept back until it commits: the
 * sends of one group commit share jobs, REPORTS_PER_JOB sends each, their reports due in steps of
 * REPORT_STEP_MS (a job per send cost its insert, reschedule and delete: ~15 % of the main thread while a
 * campaign fanned out on the sandbox).
 */
async function scheduleReports(deps: Pick<Deps, "queue" | "db" | "now">, accountId: string, reports: { at: Date; events: InboundEvent[] }[]): Promise<void> {
  let kept = keptReports.get(deps.db);
  if (!kept) keptReports.set(deps.db, (kept = writeBehind<Schedule>(deps.db, (account, schedules) => storeReports(deps, account, schedules))));
  const now = deps.now().getTime();
  const step = (at: number) => (at <= now ? at : Math.ceil(at / REPORT_STEP_MS) * REPORT_STEP_MS);
  await kept.add(
    accountId,
    reports.map((r) => ({ at: step(r.at.getTime()), events: r.events })),
  );
}

async function storeReports(deps: Pick<Deps, "queue">, accountId: string, schedules: Schedule[]): Promise<void> {
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
  deps: Deps,
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

// ------------------------------------------------------------------ dispatch

/** What the send is built from (template, media, thread): reads outside any unit, before the provider call. */
async function buildOutbound(deps: Deps, m: DispatchRow, unsubscribe: UnsubscribeLinks): Promise<OutboundMessage> {
  const c = m.content as Record<string, any>;
  // E-mail from a template or a campaign carries the recipient's one-click unsubscribe link (DESIGN §20).
  const unsubscribeUrl =
    m.channel === "email" && (m.type === "template" || m.campaignId)
      ? unsubscribe.url({ companyId: m.companyId, contactId: m.contactId, channel: "email", campaignId: m.campaignId ?? undefined })
      : undefined;
  const stored = async (ref: { id: string } | undefined): Promise<StoredMedia | undefined> => {
    if (!ref) return undefined;
    const s = await findStoredMedia({ db: deps.db, companyId: m.companyId, mediaId: ref.id, channelAccountId: m.channelAccountId });
    if (!s) throw new PermanentFailure("MEDIA_INVALID", "the media was deleted before sending");
    return s;
  };
  let content: OutboundContent;
  switch (m.type) {
    case "text":
      content = { type: "text", text: c.text };
      break;
    case "media":
      content = { type: "media", media: { url: c.media.url, file: await stored(c.media.file), caption: c.media.caption } };
      break;
    case "email":
      content = { type: "email", email: c.email };
      break;
    case "interactive":
      content = { type: "interactive", interactive: c.interactive };
      break;
    default: {
      const t = await getTemplateById({ db: deps.db, id: c.template.id });
      if (t?.status !== "approved") throw new PermanentFailure("TEMPLATE_INVALID", `template ${c.template.name} is ${t?.status ?? "deleted"}`);
      const hm = c.template.headerMedia;
      content = {
        type: "template",
        template: {
          name: t.name,
          language: t.language,
          components: t.components,
          params: c.template.params,
          headerMedia: hm ? { url: hm.url, file: await stored(hm.file) } : undefined,
          rendered: renderTemplate(t, c.template.params, { unsubscribeUrl }),
        },
      };
    }
  }
  const state = CHANNEL_RULES[m.channel as Channel].conversationRef
    ? await channelState({ db: deps.db, contactId: m.contactId, channelAccountId: m.channelAccountId })
    : undefined;
  const byId = async (id: string | null) => (id ? await messagesStore(deps.db).messageById(id) : undefined);
  const replyTo = await byId(m.replyToMessageId);
  // The thread's provider ids, oldest first (e-mail References: the parent's ancestors, then the parent).
  const references: string[] = [];
  for (let p = replyTo, hops = 0; p && hops < 50; p = await byId(p.replyToMessageId), hops++) if (p.providerMessageId) references.unshift(p.providerMessageId);
  return {
    messageId: m.id,
    to: { value: m.address, conversationRef: state?.conversationRef ?? undefined },
    content,
    replyTo: replyTo?.providerMessageId ? { providerMessageId: replyTo.providerMessageId, references } : undefined,
    unsubscribeUrl,
  };
}

class PermanentFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The dispatch job: hands a queued message to its adapter once. Idempotent by message id: a message that
 * is no longer queued (already sent by an earlier attempt, or failed) is not sent again. Transient
 * provider failures are retried with backoff (at least the provider's Retry-After); permanent ones, and
 * transient ones that outlive max attempts, fail the message (refunded when it never reached `sent`).
 */
export async function dispatchMessage(deps: Deps, job: Job<{ messageId: string }>): Promise<JobOutcome> {
  // Outside the snapshot: the first call claims the signing secret (a write).
  const unsubscribe = await unsubscribeFor(deps);
  // The message and what its send is built from (template, media, thread): plain reads, no transaction (the
  // status is checked again when the outcome is written: applyStatus).
  const m = await messagesStore(deps.db).dispatchRow(job.payload.messageId);
  if (m?.status !== "queued") return;
  let outbound: OutboundMessage | PermanentFailure;
  try {
    outbound = await buildOutbound(deps, m, unsubscribe);
  } catch (e) {
    if (!(e instanceof PermanentFailure)) throw e;
    outbound = e;
  }
  const runtime = deps.channels.get(m.channelAccountId);
  // Final states are written with the job's own finalisation: one group-committed transaction.
  const counted = (outcome: "sent" | "retry" | "failed") => deps.metrics.count("switchboard_dispatch_total", { channel: m.channel, outcome });
  const fail = (reason: FailureReason | string, message: string, code?: string): JobOutcome => (
    counted("failed"),
    {
      writes: async () => {
        await applyStatus(deps, { message: m, status: "failed", at: deps.now(), error: { reason, code, message } });
      },
    }
  );
  if (!runtime) return fail("PROVIDER_UNAVAILABLE", "the channel account is no longer configured");
  if (outbound instanceof PermanentFailure) return fail(outbound.reason, outbound.message);

  // The account's send rate, one schedule for every sender. Campaign messages may book at most 0.5 s ahead,
  // one-to-one sends 5 s, so a draining campaign delays a one-to-one send by half a second at most.
  const rate = runtime.account.maxPerSecond;
  if (rate) {
    const wait = await deps.throttle.reserveSlot(runtime.account.id, rate, job.type === BULK_DISPATCH_JOB ? 500 : 5000);
    if (wait < 0) return { retryAt: new Date(deps.now().getTime() + 250), countAttempt: false };
    if (wait > 0) await Bun.sleep(wait);
  }

  let result: SendResult;
  try {
    const started = performance.now();
    try {
      result = await runtime.adapter.send(outbound);
    } finally {
      deps.metrics.observe("switchboard_dispatch_duration_seconds", { channel: m.channel }, (performance.now() - started) / 1000);
    }
  } catch (e) {
    if (e instanceof PermanentFailure) return fail(e.reason, e.message);
    deps.log.error({ err: e, messageId: m.id }, "adapter send threw");
    result = { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: (e as Error).message };
  }
  if (result.ok) {
    counted("sent");
    const sent = result;
    if (runtime.status !== "active") deps.channels.setStatus(runtime.account.id, "active");
    return {
      writes: async () => {
        if (sent.providerMediaId) {
          const file = ((m.content as any).media?.file ?? (m.content as any).template?.headerMedia?.file) as { id: string } | undefined;
          if (file)
            await rememberProviderMediaId({
              db: deps.db,
              now: deps.now,
              mediaId: file.id,
              channelAccountId: m.channelAccountId,
              providerMediaId: sent.providerMediaId,
            });
        }
        await applyStatus(deps, { message: m, status: "sent", at: deps.now(), providerMessageId: sent.providerMessageId });
        if (sent.reports?.length) await scheduleReports(deps, m.channelAccountId, sent.reports);
      },
    };
  }
  if (result.accountStatus) deps.channels.setStatus(runtime.account.id, result.accountStatus);
  if (result.retry && job.attempts < job.maxAttempts) {
    const delay = Math.max(result.retryAfterMs ?? 0, defaultBackoffMs(job.attempts));
    deps.log.warn({ messageId: m.id, reason: result.reason, attempt: job.attempts, retryInMs: delay }, "send failed; will retry");
    counted("retry");
    return { retryAt: new Date(deps.now().getTime() + delay), error: `${result.reason}: ${result.message}` };
  }
  return fail(result.reason, result.message, result.providerCode);
}
