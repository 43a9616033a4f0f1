/**
 * The balance ledger. Every balance change is an appended entry; the balance is the newest entry's
 * `balanceAfter`. Writes must run inside a `db.tx` (IMMEDIATE: one writer), which is what makes
 * "read balance, check, append" safe under concurrent requests — no balance ever goes negative.
 */
import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { formatMicros } from "../../platform/money";
import { createReadCache } from "../../db/read-cache";
import { createLedgerStore, type LedgerEntry } from "./ledger.repository";

export type { LedgerEntry };
export type LedgerKind = "credit" | "debit" | "refund";

export function createLedger({ db, now }: { db: Db; now: () => Date }) {
  const store = createLedgerStore(db);

  // Credits also come from the CLI (another process): the cache sees them within 0.1 s; our own
  // appends update it directly. NB! Inside a write transaction the balance is read from the table, never
  // the cache, so "never negative" is decided on committed truth.
  const cache = createReadCache<string, number>(db);
  const read = store.latestBalance;

  function balance(companyId: string): number {
    return cache.get(companyId, () => read(companyId));
  }

  /**
   * The balance after this connection's last append per company, so a debit does not read the table
   * (6 % of the send path's CPU). Trusted only while nothing else can have changed it: no other process
   * committed since (data version) and nothing on this connection rolled back since (the append may have
   * been undone with its transaction or savepoint).
   */
  const running = new Map<string, { balance: number; version: number; rollbacks: number }>();

  function append(companyId: string, kind: LedgerKind, amount: number, description: string, messageId: string | null): LedgerEntry {
    // NB! No savepoint of its own: it throws before writing, and its callers' transactions undo the entry
    // when they roll back (the campaign engine, which catches a 402 and goes on, wraps the send in db.attempt).
    const entry = db.within(() => {
      const version = db.dataVersion();
      const known = running.get(companyId);
      const before = known && known.version === version && known.rollbacks === db.rollbacks() ? known.balance : read(companyId);
      const after = before + amount;
      if (after < 0)
        throw new AppError("INSUFFICIENT_BALANCE", `Insufficient balance: ${formatMicros(-amount)} needed, ${formatMicros(after - amount)} available`);
      const entry: LedgerEntry = { id: newId(), companyId, kind, amount, balanceAfter: after, messageId, description, createdAt: now() };
      store.insertEntry(entry);
      if (running.size >= 10_000) running.clear();
      running.set(companyId, { balance: after, version, rollbacks: db.rollbacks() });
      return entry;
    });
    // After the commit (or the outer transaction's savepoint): an outer rollback would leave a wrong
    // value, so drop it rather than set it.
    cache.invalidate(companyId);
    return entry;
  }

  return {
    balance,
    credit({ companyId, amount, description = "credit" }: { companyId: string; amount: number; description?: string }) {
      if (!Number.isSafeInteger(amount) || amount <= 0)
        throw new AppError("VALIDATION_FAILED", "amount must be positive", [{ pointer: "/amount", message: "must be > 0" }]);
      return append(companyId, "credit", amount, description, null);
    },
    /** Throws INSUFFICIENT_BALANCE (402) when the balance would go negative. */
    debit({ companyId, amount, messageId, description }: { companyId: string; amount: number; messageId: string | null; description: string }) {
      return append(companyId, "debit", -amount, description, messageId);
    },
    refund({ companyId, amount, messageId, description }: { companyId: string; amount: number; messageId: string | null; description: string }) {
      return append(companyId, "refund", amount, description, messageId);
    },
    /** Newest first, keyset on id. */
    list({ companyId, limit, before }: { companyId: string; limit: number; before?: string }): LedgerEntry[] {
      return store.entries({ companyId, limit, before });
    },
  };
}
export type Ledger = ReturnType<typeof createLedger>;
