/**
 * The balance ledger. Every balance change is an appended entry beside a guarded change of the company's
 * balances row (ledger.table.ts): the row decides "never negative", so concurrent requests — of this
 * process or of other instances on one PostgreSQL — cannot overspend, without a lock wider than that row.
 * Writes run inside the caller's transaction, so the entry commits (or rolls back) with what it pays for.
 */
import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { formatMicros } from "../../platform/money";
import { createReadCache } from "../../db/read-cache";
import { createLedgerStore, type LedgerEntry } from "./ledger.repository";

export type { LedgerEntry };
export type LedgerKind = "credit" | "debit" | "refund";

/** A debit or refund of a message's price (messageId null: not tied to one message). */
type MessageEntry = { companyId: string; amount: number; messageId: string | null; description: string };

export function createLedger({ db, now }: { db: Db; now: () => Date }) {
  const store = createLedgerStore(db);

  // SQLite: credits also come from the CLI (another process): the cache sees them within 0.1 s; our own
  // appends invalidate it. PostgreSQL: other instances debit all the time and tell nobody (no notification
  // per paid send), so the balance is read from its row — one lookup by key.
  const cache = createReadCache<string, number>(db, { notified: false });
  function balance(companyId: string): number | Promise<number> {
    return cache.lookup(companyId, () => store.balance(companyId));
  }

  /** The one body of every balance change: in the caller's unit (no savepoint of its own), else a unit of its own. */
  async function append(companyId: string, kind: LedgerKind, amount: number, description: string, messageId: string | null): Promise<LedgerEntry> {
    // NB! No savepoint of its own: it throws before writing, and its callers' units undo the entry when they
    // roll back (the campaign engine, which catches a 402 and goes on, wraps the send in a unit: a savepoint).
    const entry = await db.join(async () => {
      const entry = await store.appendEntry({ id: newId(), companyId, kind, amount, messageId, description, createdAt: now() });
      if (entry === null) {
        const available = await store.balance(companyId);
        throw new AppError("INSUFFICIENT_BALANCE", `Insufficient balance: ${formatMicros(-amount)} needed, ${formatMicros(available)} available`);
      }
      return entry;
    });
    // After the commit (or the outer transaction's savepoint): an outer rollback would leave a wrong
    // value, so drop it rather than set it.
    cache.invalidate(companyId);
    return entry;
  }

  return {
    async balance(companyId: string): Promise<number> {
      return balance(companyId);
    },
    /** In the caller's unit when there is one (the send path: one await per debit), else a unit of its own. */
    async credit({ companyId, amount, description = "credit" }: { companyId: string; amount: number; description?: string }) {
      if (!Number.isSafeInteger(amount) || amount <= 0)
        throw new AppError("VALIDATION_FAILED", "amount must be positive", [{ pointer: "/amount", message: "must be > 0" }]);
      return append(companyId, "credit", amount, description, null);
    },
    /** Throws INSUFFICIENT_BALANCE (402) when the balance would go negative. */
    debit({ companyId, amount, messageId, description }: MessageEntry): Promise<LedgerEntry> {
      return append(companyId, "debit", -amount, description, messageId);
    },
    refund({ companyId, amount, messageId, description }: MessageEntry): Promise<LedgerEntry> {
      return append(companyId, "refund", amount, description, messageId);
    },
    /** Newest first, keyset on id. */
    async list({ companyId, limit, before }: { companyId: string; limit: number; before?: string }): Promise<LedgerEntry[]> {
      return await store.entries({ companyId, limit, before });
    },
  };
}
export type Ledger = ReturnType<typeof createLedger>;
