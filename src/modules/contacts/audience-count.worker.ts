/**
 * The audience-count worker thread: counts one shard of a tag audience (audience-count.ts) on its own
 * read-only connection. Message in: {file, q: CountQuery}; out: {counts} or {error}.
 */
import { Database } from "bun:sqlite";
import { countAudienceCodes, type CountQuery } from "./audience-count";

declare const self: Worker;

self.onmessage = (e: MessageEvent<{ file: string; q: CountQuery }>) => {
  let db: Database | null = null;
  try {
    db = new Database(e.data.file, { readonly: true });
    db.exec("PRAGMA busy_timeout = 5000");
    postMessage({ counts: countAudienceCodes(db, e.data.q) });
  } catch (err) {
    postMessage({ error: (err as Error).message ?? String(err) });
  } finally {
    db?.close();
  }
};
