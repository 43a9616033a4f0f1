/**
 * The system routes' store: the readiness probe's round trip. (Metrics read through the other modules'
 * services; the database size is db/size.ts's.)
 */
import { storeDb, type Db } from "../../db/client";

export function createSystemStore(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    /** One trivial statement: rejects when the database cannot answer. */
    async ping(): Promise<void> {
      await db.sql("SELECT 1").get();
    },
  };
}

export type SystemStore = ReturnType<typeof createSystemStore>;
