/** The adapters' durable key/value state's store (adapter-state.ts): the adapter_state table. */
import { type Db, storeDb } from "../db/client";

const GET = "SELECT value FROM adapter_state WHERE account_id = ? AND key = ?";
const SET = "INSERT INTO adapter_state (account_id, key, value) VALUES (?, ?, ?) ON CONFLICT (account_id, key) DO UPDATE SET value = excluded.value";
const INSERT_IF_ABSENT = "INSERT INTO adapter_state (account_id, key, value) VALUES (?, ?, ?) ON CONFLICT (account_id, key) DO NOTHING";

export function createAdapterStateRows(dbIn: Db) {
  const db = storeDb(dbIn);
  const get = db.sql(GET);
  const set = db.sql(SET);
  const insertIfAbsent = db.sql(INSERT_IF_ABSENT);
  return {
    valueOf: async (accountId: string, key: string): Promise<string | undefined> => ((await get.get(accountId, key)) as { value: string } | null)?.value,
    async put(accountId: string, key: string, value: string): Promise<void> {
      await set.run(accountId, key, value);
    },
    /** Stores `value` unless the key has one already; returns the stored value (the first writer's, across instances). */
    async claim(accountId: string, key: string, value: string): Promise<string> {
      await insertIfAbsent.run(accountId, key, value);
      return ((await get.get(accountId, key)) as { value: string }).value;
    },
  };
}
