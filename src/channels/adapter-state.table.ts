import { primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/** Small persistent state per channel account (Telegram getUpdates offset, IMAP UID, account status). */
export const adapterState = sqliteTable(
  "adapter_state",
  {
    accountId: text("account_id").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.key] })],
);
