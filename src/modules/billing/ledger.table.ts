import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/**
 * The balance ledger: append-only, integer micro-units, the single source of a company's balance.
 * `balanceAfter` is the running balance after this entry, so the current balance is the newest entry's
 * (O(1) through the index) and "never negative" is checked against it inside the writing transaction.
 */
export const ledgerEntries = sqliteTable(
  "ledger_entries",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull().references(() => companies.id),
    /** credit | debit | refund */
    kind: text("kind").notNull(),
    /** Signed: credits and refunds positive, debits negative. */
    amount: integer("amount").notNull(),
    balanceAfter: integer("balance_after").notNull(),
    messageId: text("message_id"),
    description: text("description").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  // No index on message_id: nothing looks entries up by message, and each debit paid for its update.
  (t) => [index("ledger_company_idx").on(t.companyId, t.id)],
);
