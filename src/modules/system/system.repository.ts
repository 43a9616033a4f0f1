/**
 * The system routes' store: the readiness probe's round trip. (Metrics read through the other modules'
 * services; the database size is db/size.ts's.)
 */
import type { Db } from "../../db/client";

export function createSystemStore(db: Db) {
  return {
    /** One trivial statement: throws when the database cannot answer. */
    ping(): void {
      db.$client.query("SELECT 1").get();
    },
  };
}

export type SystemStore = ReturnType<typeof createSystemStore>;
