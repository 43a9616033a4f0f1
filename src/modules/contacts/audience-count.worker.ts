/**
 * The audience-count worker thread: counts one shard of a tag audience (audience-count.ts) on its own
 * read-only connection — to the SQLite file, or to the PostgreSQL database (a session of its own, so the
 * instance's event loop stays free while the server counts, and the two shards count in parallel there).
 * Message in: {source: CountSource, q: CountQuery}; out: {counts} or {error}.
 */
import { Database } from "bun:sqlite";
import { pgDatabase } from "../../db/postgres/compat";
import { PgConnection, SESSION_SETTINGS } from "../../db/postgres/libpq";
import { countAudienceCodes, type CountQuery, type CountSource } from "./audience-count";

declare const self: Worker;

self.onmessage = (e: MessageEvent<{ source: CountSource; q: CountQuery }>) => {
  let close = () => {};
  try {
    let db: Database;
    const source = e.data.source;
    if ("url" in source) {
      const conn = new PgConnection(source.url, { setup: `${SESSION_SETTINGS}; SET default_transaction_read_only = on` });
      close = () => conn.close();
      db = pgDatabase(conn);
    } else {
      const sqlite = new Database(source.file, { readonly: true });
      close = () => sqlite.close();
      sqlite.exec("PRAGMA busy_timeout = 5000");
      db = sqlite;
    }
    postMessage({ counts: countAudienceCodes(db, e.data.q) });
  } catch (err) {
    postMessage({ error: (err as Error).message ?? String(err) });
  } finally {
    close();
  }
};
