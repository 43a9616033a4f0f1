import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The event outbox: every domain event (message.sent, contact.created, …) is written here in the same
 * transaction as the change it reports. Subscribers (webhooks) enqueue their work in that transaction too.
 */
export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    type: text("type").notNull(),
    data: text("data", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  // No secondary index: nothing reads the outbox by company; retention deletes by id (UUID v7 = time order).
  () => [],
);
