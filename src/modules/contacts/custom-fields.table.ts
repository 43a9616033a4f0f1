import { integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/** A custom field definition; values live in contacts.custom_fields, validated against `type`. */
export const customFields = sqliteTable(
  "custom_fields",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    key: text("key").notNull(),
    label: text("label").notNull(),
    /** text | number | boolean | date | select */
    type: text("type").notNull(),
    /** Allowed values of a `select` field; null otherwise. */
    options: text("options", { mode: "json" }).$type<string[]>(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [uniqueIndex("custom_fields_company_key_uq").on(t.companyId, t.key)],
);
