import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Media of a post as stored: our media id or a URL, and its kind (decides the platform rules). */
export interface StoredPostMedia {
  mediaId?: string;
  url?: string;
  kind: "image" | "video";
}

/**
 * A social post (DESIGN §11). Its `status` is derived from its targets once publishing starts.
 * `run_token` changes on every schedule/cancel: publish jobs carry the token they were made with, so a job
 * of an earlier schedule finds a different token and does nothing.
 */
export const socialPosts = sqliteTable(
  "social_posts",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    /** draft | pending_approval | scheduled | publishing | published | partially_published | failed | canceled */
    status: text("status").notNull(),
    text: text("text").notNull(),
    media: text("media", { mode: "json" }).$type<StoredPostMedia[]>().notNull(),
    overrides: text("overrides", { mode: "json" }).$type<Record<string, { text?: string; media?: StoredPostMedia[] }>>().notNull(),
    scheduledAt: integer("scheduled_at", { mode: "timestamp_ms" }),
    publishedAt: integer("published_at", { mode: "timestamp_ms" }),
    requiresApproval: integer("requires_approval", { mode: "boolean" }).notNull(),
    approvedAt: integer("approved_at", { mode: "timestamp_ms" }),
    runToken: text("run_token"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("social_posts_company_idx").on(t.companyId, t.id), index("social_posts_company_status_idx").on(t.companyId, t.status, t.id)],
);

/**
 * One (post, account) pair: what is published there and how it went. `progress` holds the ids the platform
 * returned on the way (container id, publish id, post id), written the moment they come back; a retry reads
 * them and asks the platform before publishing again.
 */
export const socialPostTargets = sqliteTable(
  "social_post_targets",
  {
    id: text("id").primaryKey(),
    postId: text("post_id")
      .notNull()
      .references(() => socialPosts.id, { onDelete: "cascade" }),
    companyId: text("company_id").notNull(),
    accountId: text("account_id").notNull(),
    platform: text("platform").notNull(),
    /** pending | publishing | published | failed | canceled */
    status: text("status").notNull(),
    externalId: text("external_id"),
    url: text("url"),
    errorCode: text("error_code"),
    errorMessage: text("error_message"),
    attempts: integer("attempts").notNull().default(0),
    progress: text("progress", { mode: "json" }).$type<Record<string, string>>().notNull(),
    firstAttemptAt: integer("first_attempt_at", { mode: "timestamp_ms" }),
    publishedAt: integer("published_at", { mode: "timestamp_ms" }),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("social_post_targets_post_idx").on(t.postId), index("social_post_targets_account_idx").on(t.accountId, t.status)],
);

/** An account's daily numbers, pulled by the analytics job (UTC dates). */
export const socialAccountDays = sqliteTable(
  "social_account_days",
  {
    accountId: text("account_id").notNull(),
    companyId: text("company_id").notNull(),
    platform: text("platform").notNull(),
    date: text("date").notNull(),
    followers: integer("followers").notNull(),
    views: integer("views").notNull(),
    reach: integer("reach").notNull(),
    engagements: integer("engagements").notNull(),
    syncedAt: integer("synced_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.date] }), index("social_account_days_company_idx").on(t.companyId, t.platform, t.date)],
);

/** Posts on the platform (made here or not) with their latest metrics, pulled by the analytics job. */
export const socialPlatformMedia = sqliteTable(
  "social_platform_media",
  {
    accountId: text("account_id").notNull(),
    externalId: text("external_id").notNull(),
    companyId: text("company_id").notNull(),
    platform: text("platform").notNull(),
    /** Our post, when it was published from here. */
    postId: text("post_id"),
    text: text("text").notNull(),
    mediaType: text("media_type").notNull(),
    url: text("url"),
    publishedAt: integer("published_at", { mode: "timestamp_ms" }).notNull(),
    views: integer("views").notNull(),
    reach: integer("reach").notNull(),
    likes: integer("likes").notNull(),
    comments: integer("comments").notNull(),
    shares: integer("shares").notNull(),
    engagements: integer("engagements").notNull(),
    syncedAt: integer("synced_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.externalId] }), index("social_platform_media_account_idx").on(t.accountId, t.publishedAt)],
);
