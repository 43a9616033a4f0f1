import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Stored 2xx responses for Idempotency-Key replays, scoped to the API key. Swept after 24 h. */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    apiKeyId: text("api_key_id").notNull(),
    key: text("key").notNull(),
    method: text("method").notNull(),
    path: text("path").notNull(),
    fingerprint: text("fingerprint").notNull(),
    status: integer("status").notNull(),
    body: text("body").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.apiKeyId, t.key] })],
);
