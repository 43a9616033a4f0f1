import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/**
 * The balance ledger: append-only, integer micro-units, the single source of a company's balance.
 * `balanceAfter` is the running balance after this entry, so the current balance is the newest entry's
 * (O(1) through the index) and "never negative" is checked against it inside the writing transaction.
 */
export const ledgerEntries = sqliteTable(
  "ledger_entries",
  {
    id: text("id").notNull(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    /** credit | debit | refund */
    kind: text("kind").notNull(),
    /** Signed: credits and refunds positive, debits negative. */
    amount: integer("amount").notNull(),
    balanceAfter: integer("balance_after").notNull(),
    messageId: text("message_id"),
    description: text("description").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  // Keyed by company, then id (UUIDv7, time-ordered): every read is a company's (its balance is its newest
  // entry, its statement a page by id). On SQLite the table is WITHOUT ROWID (migration 0012: drizzle has no
  // word for it): the key is the table, one b-tree per entry instead of three (rows, id, company index).
  // No index on message_id: nothing looks entries up by message, and each debit paid for its update.
  (t) => [primaryKey({ columns: [t.companyId, t.id] })],
);

/**
 * Each company's current balance, the row that holds "never negative" (DESIGN §15): a debit is one guarded
 * `UPDATE … SET amount = amount + ? WHERE … AND amount + ? >= 0 RETURNING amount`, so instances writing at
 * once cannot both spend the last unit, and nothing needs a lock wider than this row. The ledger entry
 * records the amount returned as its `balanceAfter`. Created with the company's first entry.
 */
export const balances = sqliteTable("balances", {
  companyId: text("company_id")
    .primaryKey()
    .references(() => companies.id),
  amount: integer("amount").notNull(),
});
