/** Durable per-account key/value state for adapters (`ctx.state`): set() has committed when it returns. */
import type { Db } from "../db/client";
import { createAdapterStateRows } from "./adapter-state.store";
import type { AdapterStateStore } from "./channel.types";

export function createAdapterStateStore(db: Db, accountId: string): AdapterStateStore {
  const rows = createAdapterStateRows(db);
  return {
    get: (key) => rows.valueOf(accountId, key),
    set: (key, value) => rows.put(accountId, key, value),
  };
}
