import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/**
 * A contact. NB! Rows are never deleted: DELETE erases the personal data (names, city, country, custom field
 * values; identities, tags and consent rows are removed) and sets `deleted_at`, leaving a tombstone so that
 * messages and conversations keep a valid `contact_id`. Every read filters `deleted_at IS NULL`.
 */
export const contacts = sqliteTable(
  "contacts",
  {
    /**
     * The row's stable integer key (an INTEGER PRIMARY KEY is the rowid, and VACUUM keeps it): the name search
     * index `contact_search` (FTS5, external content, kept by triggers — see migrations/0001) points at it.
     */
    seq: integer("seq").primaryKey(),
    id: text("id").notNull().unique(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    firstName: text("first_name"),
    lastName: text("last_name"),
    city: text("city"),
    country: text("country"),
    /** Custom field key → value (validated against custom_fields on write). */
    customFields: text("custom_fields", { mode: "json" }).$type<Record<string, unknown>>().notNull().default(sql`'{}'`),
    /** Sends to a blocked contact are refused with CONTACT_BLOCKED (messaging). */
    blocked: integer("blocked", { mode: "boolean" }).notNull().default(false),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
    deletedAt: integer("deleted_at", { mode: "timestamp_ms" }),
  },
  (t) => [
    // Newest-first listing (ids are UUID v7) and the createdAfter/updatedAfter filters.
    index("contacts_company_idx").on(t.companyId, t.id),
    index("contacts_company_updated_idx").on(t.companyId, t.updatedAt),
    // The few blocked contacts (the campaign estimate counts them apart from the rest). Partial: no cost for
    // the others.
    index("contacts_blocked_idx").on(t.companyId, t.id).where(sql`blocked = 1`),
    // NB! No b-tree index on names: `q` searches the FTS5 table contact_search. Two lower(name) indexes cost
    // 45 % of bulk import time (random insert positions in large b-trees); FTS5 appends segments instead.
  ],
);

/**
 * A channel identity: (company, channel, normalised value) is the primary key — the key, not a read-then-write,
 * guarantees one contact per identity. `status` is `pending` for an `@username` not yet resolved to a
 * platform user id (resolved by the first inbound message or a provider lookup).
 * NB! WITHOUT ROWID (migrations/0001; drizzle cannot declare it): the table is its own unique index, which
 * saves two b-tree inserts per identity on bulk imports. A drizzle-kit table rebuild of it must keep that.
 */
export const contactIdentities = sqliteTable(
  "contact_identities",
  {
    companyId: text("company_id").notNull(),
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id),
    channel: text("channel").notNull(),
    value: text("value").notNull(),
    /** verified | pending */
    status: text("status").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.channel, t.value] }), index("contact_identities_contact_idx").on(t.contactId, t.channel, t.status)],
);

/**
 * Current consent per (contact, channel); a missing row means `unknown`. NB! WITHOUT ROWID on SQLite
 * (migrations/0013; drizzle cannot declare it): a read by the key is one probe, as the campaign estimate does
 * once per member.
 */
export const contactConsents = sqliteTable(
  "contact_consents",
  {
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id),
    channel: text("channel").notNull(),
    companyId: text("company_id").notNull(),
    /** opted_in | opted_out */
    status: text("status").notNull(),
    source: text("source").notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.contactId, t.channel] }), index("contact_consents_filter_idx").on(t.companyId, t.channel, t.status)],
);

/** Append-only consent history (who changed what, when, through which source). */
export const consentHistory = sqliteTable(
  "consent_history",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id),
    channel: text("channel").notNull(),
    status: text("status").notNull(),
    /** api | inbound_keyword | provider | campaign_unsubscribe | import */
    source: text("source").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("consent_history_contact_idx").on(t.contactId, t.id)],
);

/**
 * Where a merged-away contact went (POST /contacts/{id}/merge): links made before the merge that name the old
 * id — unsubscribe tokens in mail already delivered — still reach the person. Chains are kept flat (merging the
 * survivor again re-points its rows here), so one lookup answers.
 */
export const contactMerges = sqliteTable(
  "contact_merges",
  {
    mergedContactId: text("merged_contact_id").primaryKey(),
    companyId: text("company_id").notNull(),
    contactId: text("contact_id").notNull(),
    mergedAt: integer("merged_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("contact_merges_contact_idx").on(t.contactId)],
);
