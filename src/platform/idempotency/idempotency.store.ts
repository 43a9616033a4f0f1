/** The idempotency records' store (idempotency.ts): every read and write of the idempotency_keys table. */
import { and, eq, lt, lte } from "drizzle-orm";
import type { Db } from "../../db/client";
import { idempotencyKeys } from "./idempotency.table";

export type IdempotencyRecord = typeof idempotencyKeys.$inferSelect;

export function createIdempotencyKeysStore(db: Db) {
  return {
    find(apiKeyId: string, key: string): IdempotencyRecord | undefined {
      return db
        .select()
        .from(idempotencyKeys)
        .where(and(eq(idempotencyKeys.apiKeyId, apiKeyId), eq(idempotencyKeys.key, key)))
        .get();
    },
    /**
     * Inserts the record, or replaces one of the same (API key, key) created at or before `replaceUpTo`;
     * false when a newer record is there (nothing written).
     */
    upsertUnlessFresh(record: IdempotencyRecord, replaceUpTo: Date): boolean {
      const res = db
        .insert(idempotencyKeys)
        .values(record)
        .onConflictDoUpdate({
          target: [idempotencyKeys.apiKeyId, idempotencyKeys.key],
          set: {
            method: record.method,
            path: record.path,
            fingerprint: record.fingerprint,
            status: record.status,
            body: record.body,
            createdAt: record.createdAt,
          },
          setWhere: lte(idempotencyKeys.createdAt, replaceUpTo),
        })
        .run();
      return (res as unknown as { changes: number }).changes > 0;
    },
    /** Deletes the records created before `before`; returns how many. */
    deleteOlderThan(before: Date): number {
      const res = db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, before)).run();
      return (res as unknown as { changes: number }).changes;
    },
  };
}
