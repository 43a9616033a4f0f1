/**
 * A module's store for a connection, built by `create` once, then a WeakMap lookup per call — no allocation
 * on the send path. For services that are plain functions handed `db` on every call (their contract with the
 * modules that call them) until each module is built by a factory that receives its store (issue 39).
 */
import type { Db } from "./client";

export function perConnection<S>(create: (db: Db) => S): (db: Db) => S {
  const built = new WeakMap<Db, S>();
  return (db) => {
    let store = built.get(db);
    if (store === undefined) built.set(db, (store = create(db)));
    return store;
  };
}
