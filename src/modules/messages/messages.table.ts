import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { CHANNEL_RULES } from "../../channels/channel.rules";

/**
 * Outbound messages on channels with a daily DM limit (X): the only messages counted per account and day, so
 * the only ones in that index. A query that counts them must say this condition word for word (SQLite uses a
 * partial index only when the query's WHERE contains its condition).
 */
export const DAILY_LIMITED_OUTBOUND = `direction = 'outbound' AND channel IN (${Object.entries(CHANNEL_RULES)
  .filter(([, r]) => r.dailyDmLimit)
  .map(([c]) => `'${c}'`)
  .join(", ")})`;

/**
 * Queued messages that are their own dispatch job (the conditions of the two dispatch indexes, one per lane:
 * one-to-one sends and campaign sends; said word for word by their queries).
 */
export const DISPATCH_LANES = {
  direct: "status = 'queued' AND lease_until IS NOT NULL AND campaign_id IS NULL",
  bulk: "status = 'queued' AND lease_until IS NOT NULL AND campaign_id IS NOT NULL",
} as const;

/**
 * The job types of the two lanes: a queued message whose first attempt ended without sending it (a retry) is a
 * jobs row of one of these, its payload `{messageId}`, and has left its lane (lease_until NULL).
 */
export const DISPATCH_JOBS = { direct: "message.dispatch", bulk: "message.dispatch.bulk" } as const;

/**
 * Every message, outbound (POST /messages, campaigns) and inbound (webhooks). Status times are columns:
 * queued (createdAt) → sent → delivered → read, or failed (from queued or sent).
 */
export const messages = sqliteTable(
  "messages",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    contactId: text("contact_id").notNull(),
    channel: text("channel").notNull(),
    channelAccountId: text("channel_account_id").notNull(),
    /** outbound | inbound */
    direction: text("direction").notNull(),
    /** text | media | template | email (inbound: also location, contacts, unsupported) */
    type: text("type").notNull(),
    content: text("content", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** The identity value the message went to / came from, frozen at send time. */
    address: text("address").notNull(),
    /** scheduled | queued | sent | delivered | read | failed | canceled | received */
    status: text("status").notNull(),
    priceType: text("price_type").notNull(),
    unitPrice: integer("unit_price").notNull(),
    charged: integer("charged", { mode: "boolean" }).notNull(),
    refunded: integer("refunded", { mode: "boolean" }).notNull().default(false),
    metadata: text("metadata", { mode: "json" }).$type<Record<string, string>>().notNull(),
    templateId: text("template_id"),
    replyToMessageId: text("reply_to_message_id"),
    providerMessageId: text("provider_message_id"),
    errorCode: text("error_code"),
    errorReason: text("error_reason"),
    errorMessage: text("error_message"),
    /** Inbound: the provider's timestamp of the message. */
    providerTimestamp: integer("provider_timestamp", { mode: "timestamp_ms" }),
    sentAt: integer("sent_at", { mode: "timestamp_ms" }),
    deliveredAt: integer("delivered_at", { mode: "timestamp_ms" }),
    readAt: integer("read_at", { mode: "timestamp_ms" }),
    failedAt: integer("failed_at", { mode: "timestamp_ms" }),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
    /** Set by the API key that sent it (null for inbound). */
    apiKeyId: text("api_key_id"),
    /** The campaign that created it (null for one-to-one and inbound messages). */
    campaignId: text("campaign_id"),
    /**
     * A queued message is its own dispatch job until its first attempt ends (queue.ts JobAnchor; a retry is
     * a jobs row): `lease_until` is when it is due, or — once a worker holds it, `lease_token` set — when
     * that lease expires. Left as they are once the message leaves `queued` (the indexes no longer hold it).
     */
    leaseUntil: integer("lease_until"),
    leaseToken: text("lease_token"),
    /**
     * When a scheduled message is due (POST /messages `scheduledAt`, DESIGN §18); null for messages sent at
     * once. Its due job is a jobs row (message.scheduled) written with the message; no index here (the job's).
     */
    scheduledAt: integer("scheduled_at", { mode: "timestamp_ms" }),
  },
  (t) => [
    // Duplicate provider deliveries of one inbound message are ignored; statuses find their message.
    // Partial: an accepted message has no provider id until it is sent, so the accept skips this b-tree
    // (`provider_message_id = ?` in a query implies IS NOT NULL, so both engines still use it).
    uniqueIndex("messages_provider_id_uq").on(t.channelAccountId, t.providerMessageId).where(sql`provider_message_id IS NOT NULL`),
    // A conversation's history; watermark receipts search a contact's conversations on the account.
    index("messages_conversation_idx").on(t.conversationId, t.id),
    // The X daily DM limit counts an account's outbound messages since midnight UTC. Every index here is
    // written by every message it covers, so there are few: DELETE /media's in-use check searches the
    // dispatch backlog, and watermark receipts a contact's conversations, without one of their own.
    index("messages_daily_limit_idx").on(t.channelAccountId, t.createdAt).where(sql.raw(DAILY_LIMITED_OUTBOUND)),
    // The dispatch backlog per lane, as the queue claims it: per channel account (its group), the messages
    // not held (lease_token NULL) by due time, then the held ones (bounded by the workers: their expired
    // leases are looked for there). One entry per queued message, instead of a dispatch job's row, key and
    // claim index entries.
    index("messages_dispatch_idx").on(t.channelAccountId, t.leaseToken, t.leaseUntil).where(sql.raw(DISPATCH_LANES.direct)),
    index("messages_bulk_dispatch_idx").on(t.channelAccountId, t.leaseToken, t.leaseUntil).where(sql.raw(DISPATCH_LANES.bulk)),
    // GET /messages, newest first by (created_at, id): the company's messages (also the window of GET
    // /messages/stats and of GET /channels's health). Filters by status, channel and campaign are checked on
    // the company's rows as the walk meets them; a contact's messages are found through its conversations
    // (messages_conversation_idx). The failed ones (few among many, and a message enters once, at the end)
    // have a partial index. The queued ones have none: an entry written at acceptance and removed at `sent`
    // costs every message twice; the backlog is found where the dispatch keeps it (the lanes' indexes and
    // the dispatch jobs rows, messages.repository.ts companyBacklog).
    // NB! Every index here is written by every message it covers, and one on `status` is rewritten at each
    // status change. Measured with an index per filter: +12 % CPU on the dispatch, +18 % on the reports, a
    // 200k campaign 12-16 % slower; migration 0014 has these two.
    index("messages_company_created_idx").on(t.companyId, t.createdAt, t.id),
    index("messages_company_failed_idx").on(t.companyId, t.createdAt, t.id).where(sql`status = 'failed'`),
  ],
);
