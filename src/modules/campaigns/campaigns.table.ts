import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { EXCLUSION_REASONS, type ExclusionReason } from "../../channels/channel.eligibility";

/**
 * A template bulk send (DESIGN §10). The funnel counters are kept in the row, moved in the same transaction
 * as the recipient row they count (never recounted from recipients on reads: a campaign has up to millions).
 */
export const campaigns = sqliteTable(
  "campaigns",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    name: text("name").notNull(),
    /** scheduled | running | paused | completed | canceled | failed */
    status: text("status").notNull(),
    channel: text("channel").notNull(),
    channelAccountId: text("channel_account_id").notNull(),
    templateId: text("template_id").notNull(),
    audience: text("audience", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    askValues: text("ask_values", { mode: "json" }).$type<Record<string, string>>().notNull(),
    headerMediaId: text("header_media_id"),
    priceType: text("price_type").notNull(),
    unitPrice: integer("unit_price").notNull(),
    /** Estimate at creation (micros): sendable × unit price. */
    estimatedCost: integer("estimated_cost").notNull(),
    /** Debited for this campaign's messages, less refunds (micros). */
    spent: integer("spent").notNull().default(0),
    /** INSUFFICIENT_BALANCE | ERROR_RATE | MANUAL while paused; failure reason while failed. */
    pauseReason: text("pause_reason"),
    failureReason: text("failure_reason"),
    /** Audience resolution: null until every recipient row exists; then the recipients are the snapshot. */
    resolvedAt: integer("resolved_at", { mode: "timestamp_ms" }),
    /** Resume point of the audience resolution (last contact id written). */
    resolveCursor: text("resolve_cursor"),
    /** Outcomes of the last (up to 100) sends, oldest first: "s" sent, "f" failed (the ERROR_RATE pause). */
    recentOutcomes: text("recent_outcomes").notNull().default(""),
    matched: integer("matched").notNull().default(0),
    nPending: integer("n_pending").notNull().default(0),
    /** Pending recipients whose message exists (queued, not yet sent or failed). */
    nQueued: integer("n_queued").notNull().default(0),
    nSent: integer("n_sent").notNull().default(0),
    nDelivered: integer("n_delivered").notNull().default(0),
    nRead: integer("n_read").notNull().default(0),
    nFailed: integer("n_failed").notNull().default(0),
    nCanceled: integer("n_canceled").notNull().default(0),
    nReplied: integer("n_replied").notNull().default(0),
    /** Recipients excluded, one counter per reason (channel.eligibility.ts EXCLUSIONS): x<Reason> (EXCLUDED_COLUMN). */
    xNoIdentity: integer("x_no_identity").notNull().default(0),
    xNoConsent: integer("x_no_consent").notNull().default(0),
    xBlocked: integer("x_blocked").notNull().default(0),
    xOutsideWindow: integer("x_outside_window").notNull().default(0),
    xNoPriorConversation: integer("x_no_prior_conversation").notNull().default(0),
    scheduledAt: integer("scheduled_at", { mode: "timestamp_ms" }),
    startedAt: integer("started_at", { mode: "timestamp_ms" }),
    completedAt: integer("completed_at", { mode: "timestamp_ms" }),
    canceledAt: integer("canceled_at", { mode: "timestamp_ms" }),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
    apiKeyId: text("api_key_id"),
  },
  (t) => [index("campaigns_company_idx").on(t.companyId, t.id), index("campaigns_due_idx").on(t.status, t.scheduledAt)],
);

/** A campaign row's counter of the recipients excluded for a reason: `x` + the reason (xNoIdentity). */
export type ExcludedField = `x${Capitalize<ExclusionReason>}`;
export const excludedField = (reason: ExclusionReason) => `x${reason[0]!.toUpperCase()}${reason.slice(1)}` as ExcludedField;
/** Each reason's counter column (x_no_identity), read from the table: a reason without its column does not compile. */
export const EXCLUDED_COLUMN = Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, campaigns[excludedField(r)].name])) as Record<ExclusionReason, string>;

/**
 * One row per (campaign, contact): the checkpoint of the fan-out. `message_id` is set in the same transaction
 * that creates the message, so a recipient is sent at most once across pause, resume, cancel, crash and
 * restart. status: pending | sent | delivered | read | failed | excluded | canceled (the furthest status of
 * its message once it has one; `pending` with a message id = queued).
 */
export const campaignRecipients = sqliteTable(
  "campaign_recipients",
  {
    campaignId: text("campaign_id").notNull(),
    contactId: text("contact_id").notNull(),
    status: text("status").notNull(),
    /** Exclusion reason (noIdentity …) or the message's failure reason (USER_BLOCKED …; before 0.2.0 the provider's code). */
    reason: text("reason"),
    messageId: text("message_id"),
    repliedAt: integer("replied_at", { mode: "timestamp_ms" }),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.campaignId, t.contactId] }),
    // The fan-out's next batch: pending recipients without a message, in contact order.
    index("campaign_recipients_todo_idx").on(t.campaignId, t.contactId).where(sql`status = 'pending' AND message_id IS NULL`),
    // Replies: a contact's recipient rows whose message went out and who has not replied yet.
    index("campaign_recipients_contact_idx").on(t.contactId).where(sql`message_id IS NOT NULL AND replied_at IS NULL`),
    index("campaign_recipients_status_idx").on(t.campaignId, t.status, t.contactId),
  ],
);
