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

/**
 * A value generated once per appliance (a signing secret): the first instance's `generate()` is stored and every
 * instance, now and after restarts, reads that one — several instances starting at once never disagree.
 */
export function claimAdapterState(db: Db, accountId: string, key: string, generate: () => string): string {
  const rows = createAdapterStateRows(db);
  return rows.valueOf(accountId, key) ?? rows.claim(accountId, key, generate());
}
