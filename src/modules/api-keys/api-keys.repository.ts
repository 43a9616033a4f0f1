/**
 * The API keys store: every read and write of the api_keys table. Callers hold the transaction; nothing
 * here opens one.
 */
import { desc, eq, sql } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { apiKeys } from "./api-keys.table";
import { perConnection } from "../../db/per-connection";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export function createApiKeysStore(dbIn: Db) {
  const db = storeDb(dbIn);
  // One prepared statement: the API guard looks a key up on every request (on a cache miss).
  const byHash = db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.hash, placeholder("hash")))
    .prepare();
  return {
    async insertKey(row: ApiKeyRow): Promise<void> {
      await db.insert(apiKeys).values(row).run();
    },
    /** Newest first; every company's when `companyId` is not given. */
    async list(companyId?: string): Promise<ApiKeyRow[]> {
      const q = db.select().from(apiKeys);
      return await (companyId ? q.where(eq(apiKeys.companyId, companyId)) : q).orderBy(desc(apiKeys.id)).all();
    },
    async byId(id: string): Promise<ApiKeyRow | undefined> {
      return await db.select().from(apiKeys).where(eq(apiKeys.id, id)).get();
    },
    async byHash(hash: string): Promise<ApiKeyRow | undefined> {
      return await byHash.get({ hash });
    },
    async revoke(id: string, at: Date): Promise<void> {
      await db.update(apiKeys).set({ revokedAt: at }).where(eq(apiKeys.id, id)).run();
    },
    async setLastUsed(id: string, at: Date): Promise<void> {
      await db.update(apiKeys).set({ lastUsedAt: at }).where(eq(apiKeys.id, id)).run();
    },
  };
}

export type ApiKeysStore = ReturnType<typeof createApiKeysStore>;

/** The store of a connection, built once. */
export const apiKeysStore = perConnection(createApiKeysStore);

function placeholder(name: string) {
  return sql.placeholder(name) as unknown as string;
}
