/** The adapters' durable key/value state's store (adapter-state.ts): the adapter_state table. */
import type { Db } from "../db/client";

export function createAdapterStateRows(db: Db) {
  const get = db.$client.prepare("SELECT value FROM adapter_state WHERE account_id = ? AND key = ?");
  const set = db.$client.prepare(
    "INSERT INTO adapter_state (account_id, key, value) VALUES (?, ?, ?) ON CONFLICT (account_id, key) DO UPDATE SET value = excluded.value",
  );
  const insertIfAbsent = db.$client.prepare("INSERT INTO adapter_state (account_id, key, value) VALUES (?, ?, ?) ON CONFLICT (account_id, key) DO NOTHING");
  return {
    valueOf: (accountId: string, key: string): string | undefined => (get.get(accountId, key) as { value: string } | null)?.value,
    put(accountId: string, key: string, value: string): void {
      set.run(accountId, key, value);
    },
    /** Stores `value` unless the key has one already; returns the stored value (the first writer's, across instances). */
    claim(accountId: string, key: string, value: string): string {
      insertIfAbsent.run(accountId, key, value);
      return (get.get(accountId, key) as { value: string }).value;
    },
  };
}
