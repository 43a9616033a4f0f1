import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** A tenant. Every other row carries its company id; a key never sees another company's rows. */
export const companies = sqliteTable("companies", {
  id: text("id").primaryKey(),
  slug: text("slug").notNull().unique(),
  name: text("name").notNull(),
  createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
});
