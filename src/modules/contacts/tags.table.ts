import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";
import { contacts } from "./contacts.table";

/** A tag name, unique per company (exact, case-sensitive match after trimming). */
export const tags = sqliteTable(
  "tags",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    name: text("name").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [uniqueIndex("tags_company_name_uq").on(t.companyId, t.name)],
);

/**
 * A contact's tag. NB! WITHOUT ROWID (migrations/0001; drizzle cannot declare it): the primary key is the
 * table, one b-tree fewer per tag link on bulk imports. A drizzle-kit table rebuild of it must keep that.
 */
export const contactTags = sqliteTable(
  "contact_tags",
  {
    contactId: text("contact_id")
      .notNull()
      .references(() => contacts.id),
    tagId: text("tag_id")
      .notNull()
      .references(() => tags.id),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.contactId, t.tagId] }),
    // NB! Drives `GET /contacts?tag=X`: walks the tag's contacts newest first (contact ids are UUID v7).
    index("contact_tags_tag_idx").on(t.tagId, t.contactId),
  ],
);
