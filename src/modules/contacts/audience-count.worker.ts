/**
 * The audience-count worker thread: counts one shard of a tag audience (audience-count.ts) on its own
 * read-only connection — to the SQLite file, or to the PostgreSQL database (a session of its own, so the
 * instance's event loop stays free while the server counts, and the two shards count in parallel there).
 * Message in: {source: CountSource, q: CountQuery}; out: {counts} or {error}.
 */
import type { CountQuery, CountSource } from "./audience-count";
import { openAudienceCountStore } from "./audience.repository";

declare const self: Worker;

self.onmessage = (e: MessageEvent<{ source: CountSource; q: CountQuery }>) => {
  let store: ReturnType<typeof openAudienceCountStore> | undefined;
  try {
    store = openAudienceCountStore(e.data.source);
    postMessage({ counts: store.countCodes(e.data.q) });
  } catch (err) {
    postMessage({ error: (err as Error).message ?? String(err) });
  } finally {
    store?.close();
  }
};
