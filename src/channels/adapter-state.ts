/** Durable per-account key/value state for adapters (`ctx.state`): set() has committed when it returns. */
import type { Db } from "../db/client";
import { createAdapterStateRows } from "./adapter-state.store";
import type { AdapterStateStore } from "./channel.types";

export function createAdapterStateStore(db: Db, accountId: string): AdapterStateStore {
  const rows = createAdapterStateRows(db);
  return {
    read: (key) => rows.valueOf(accountId, key),
    write: (key, value) => rows.put(accountId, key, value),
  };
}

/**
 * A value generated once per appliance (a signing secret): the first instance's `generate()` is stored and every
 * instance, now and after restarts, reads that one — several instances starting at once never disagree.
 */
export async function claimAdapterValue(db: Db, accountId: string, key: string, generate: () => string): Promise<string> {
  const rows = createAdapterStateRows(db);
  return (await rows.valueOf(accountId, key)) ?? (await rows.claim(accountId, key, generate()));
}
