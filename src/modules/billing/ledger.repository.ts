/**
 * The ledger store: every read and write of the ledger_entries and balances tables. Callers hold the
 * transaction (the balance's change and its entry commit together); nothing here opens one.
 */
import { and, desc, eq, lt } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { insertInto } from "../../db/rows";
import { ledgerEntries } from "./ledger.table";

export type LedgerEntry = typeof ledgerEntries.$inferSelect;

export function createLedgerStore(dbIn: Db) {
  const db = storeDb(dbIn);
  // Raw SQL: drizzle's prepared query spent 5 µs of the send path's ~150 mapping this one value.
  const current = db.sql("SELECT amount FROM balances WHERE company_id = ?");
  // The guard is the invariant: the row changes only when it stays >= 0 (a refused debit changes nothing).
  const adjust = db.sql("UPDATE balances SET amount = amount + ?1 WHERE company_id = ?2 AND amount + ?1 >= 0 RETURNING amount");
  const open = db.sql("INSERT INTO balances (company_id, amount) VALUES (?, 0) ON CONFLICT (company_id) DO NOTHING");
  // PostgreSQL: the guarded change and its entry in one statement. NB! The balances row stays locked from this
  // statement to COMMIT, and every other change of the company's balance (on any instance) waits for it: one
  // round trip less inside that window. (SQLite: two statements, which are calls there, not round trips.)
  const adjustAndRecord =
    db.engine === "postgres"
      ? db.sql(
          `WITH b AS (UPDATE balances SET amount = amount + ?4 WHERE company_id = ?2 AND amount + ?4 >= 0 RETURNING amount)
           INSERT INTO ledger_entries (id, company_id, kind, amount, balance_after, message_id, description, created_at)
           SELECT ?1, ?2, ?3, ?4, b.amount, ?5, ?6, CAST(?7 AS bigint) FROM b RETURNING balance_after`,
        )
      : null;
  /**
   * Adds `amount` (negative: a debit) to the balance unless that would take it below 0: the balance after,
   * or null (nothing changed). A company's first change opens its row.
   */
  async function adjustBalance(companyId: string, amount: number): Promise<number | null> {
    const row = (await adjust.get(amount, companyId)) as { amount: number } | null;
    if (row) return row.amount;
    if (amount < 0) return null; // refused, or no row: a balance of 0 pays for nothing
    await open.run(companyId);
    return ((await adjust.get(amount, companyId)) as { amount: number }).amount;
  }
  return {
    /** The company's balance (0 before its first entry). */
    async balance(companyId: string): Promise<number> {
      return ((await current.get(companyId)) as { amount: number } | null)?.amount ?? 0;
    },
    /**
     * adjustBalance, then the entry that records it (its `balanceAfter` the balance after): the entry, or null
     * when the balance was not changed (refused: it would go below 0).
     */
    async appendEntry(entry: Omit<LedgerEntry, "balanceAfter">): Promise<LedgerEntry | null> {
      if (adjustAndRecord) {
        const { id, companyId, kind, amount, messageId, description, createdAt } = entry;
        const row = (await adjustAndRecord.get(id, companyId, kind, amount, messageId, description, createdAt.getTime())) as { balance_after: number } | null;
        if (row) return { ...entry, balanceAfter: Number(row.balance_after) };
        if (amount < 0) return null; // refused, or no row: a balance of 0 pays for nothing
      }
      const after = await adjustBalance(entry.companyId, entry.amount);
      if (after === null) return null;
      const full: LedgerEntry = { ...entry, balanceAfter: after };
      await insertInto(db, ledgerEntries, full);
      return full;
    },
    /** Newest first, keyset on id. */
    async entries({ companyId, limit, before }: { companyId: string; limit: number; before?: string }): Promise<LedgerEntry[]> {
      return await db
        .select()
        .from(ledgerEntries)
        .where(before ? and(eq(ledgerEntries.companyId, companyId), lt(ledgerEntries.id, before)) : eq(ledgerEntries.companyId, companyId))
        .orderBy(desc(ledgerEntries.id))
        .limit(limit)
        .all();
    },
  };
}

export type LedgerStore = ReturnType<typeof createLedgerStore>;
