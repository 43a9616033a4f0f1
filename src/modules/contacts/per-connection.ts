/**
 * The contacts module's services are plain functions that take `db` (their contract with the modules that call
 * them); each finds its store here: built by `create` once per connection, then a WeakMap lookup per call — no
 * allocation on the send path.
 */
import type { Db } from "../../db/client";

export function perConnection<S>(create: (db: Db) => S): (db: Db) => S {
  const built = new WeakMap<Db, S>();
  return (db) => {
    let store = built.get(db);
    if (store === undefined) built.set(db, (store = create(db)));
    return store;
  };
}
