/** The idempotency records' store (idempotency.ts): every read and write of the idempotency_keys table. */
import { and, eq, lt, lte } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { idempotencyKeys } from "./idempotency.table";

export type IdempotencyRecord = typeof idempotencyKeys.$inferSelect;

export function createIdempotencyKeysStore(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    async find(apiKeyId: string, key: string): Promise<IdempotencyRecord | undefined> {
      return await db
        .select()
        .from(idempotencyKeys)
        .where(and(eq(idempotencyKeys.apiKeyId, apiKeyId), eq(idempotencyKeys.key, key)))
        .get();
    },
    /**
     * Inserts the record, or replaces one of the same (API key, key) created at or before `replaceUpTo`;
     * false when a newer record is there (nothing written).
     */
    async upsertUnlessFresh(record: IdempotencyRecord, replaceUpTo: Date): Promise<boolean> {
      const res = await db
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
      return res.changes > 0;
    },
    /** Deletes the records created before `before`; returns how many. */
    async deleteOlderThan(before: Date): Promise<number> {
      const res = await db.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, before)).run();
      return res.changes;
    },
  };
}
