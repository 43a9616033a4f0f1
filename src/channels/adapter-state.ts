/** Durable per-account key/value state for adapters (`ctx.state`): set() has committed when it returns. */
import type { Db } from "../db/client";
import type { AdapterStateStore } from "./channel.types";

export function createAdapterStateStore(db: Db, accountId: string): AdapterStateStore {
  const get = db.$client.prepare("SELECT value FROM adapter_state WHERE account_id = ? AND key = ?");
  const set = db.$client.prepare(
    "INSERT INTO adapter_state (account_id, key, value) VALUES (?, ?, ?) ON CONFLICT (account_id, key) DO UPDATE SET value = excluded.value",
  );
  return {
    get: (key) => (get.get(accountId, key) as { value: string } | null)?.value,
    set: (key, value) => {
      set.run(accountId, key, value);
    },
  };
}
