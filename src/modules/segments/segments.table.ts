import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/**
 * A saved contact filter (DESIGN §19). `filter` is the tree as the client wrote it (JSON text), checked on every
 * write and again when read for a count, a page or a campaign (a custom field's definition may change).
 */
export const segments = sqliteTable(
  "segments",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    name: text("name").notNull(),
    filter: text("filter").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    // One name per company (409 on a second); GET /segments lists newest first (ids are UUID v7).
    uniqueIndex("segments_company_name_uq").on(t.companyId, t.name),
    index("segments_company_idx").on(t.companyId, t.id),
  ],
);
