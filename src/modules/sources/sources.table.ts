import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * A source: a link, QR code or ad that brings contacts (DESIGN §13). `code` is what the click-to-chat link
 * carries (unique per company); `external_id` is the ad's id at the platform for `ad` sources created from a
 * Click-to-WhatsApp or Messenger ad referral.
 */
export const sources = sqliteTable(
  "sources",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    name: text("name").notNull(),
    /** link | qr | ad | other */
    type: text("type").notNull(),
    channel: text("channel").notNull(),
    channelAccountId: text("channel_account_id").notNull(),
    code: text("code").notNull(),
    externalId: text("external_id"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    uniqueIndex("sources_code_uq").on(t.companyId, t.code),
    index("sources_company_idx").on(t.companyId, t.id),
    index("sources_external_idx").on(t.companyId, t.externalId),
  ],
);

/**
 * A contact's first-contact source: one row per contact, written by the first inbound message that carries a
 * source (via `auto`, first touch wins) or by PUT /contacts/{id}/source (`manual`). `source_id` null: removed
 * by hand (a later referral does not attribute again). `referral` is the provider's raw referral (JSON).
 */
export const contactSources = sqliteTable(
  "contact_sources",
  {
    contactId: text("contact_id").primaryKey(),
    companyId: text("company_id").notNull(),
    sourceId: text("source_id"),
    via: text("via").notNull(),
    referral: text("referral", { mode: "json" }).$type<Record<string, unknown>>(),
    attributedAt: integer("attributed_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  // Statistics: the contacts a source brought in a period.
  (t) => [index("contact_sources_source_idx").on(t.sourceId, t.attributedAt)],
);

/** Every change of a contact's source: the automatic attribution and each manual one (`by`: the API key's name). */
export const contactSourceHistory = sqliteTable(
  "contact_source_history",
  {
    id: text("id").primaryKey(),
    contactId: text("contact_id").notNull(),
    fromSourceId: text("from_source_id"),
    toSourceId: text("to_source_id"),
    via: text("via").notNull(),
    by: text("by"),
    at: integer("at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("contact_source_history_contact_idx").on(t.contactId, t.id)],
);
