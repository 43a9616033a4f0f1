/**
 * The audience-count worker thread: counts one shard of a tag audience (audience-count.ts) on its own
 * read-only connection to the SQLite file (PostgreSQL counts on the instance's pool instead).
 * Message in: {source: CountSource, q: CountQuery}; out: {counts} or {error}.
 */
import type { CountQuery, CountSource } from "./audience-count";
import { openAudienceCountStore } from "./audience.repository";

declare const self: Worker;

self.onmessage = async (e: MessageEvent<{ source: CountSource; q: CountQuery }>) => {
  let store: ReturnType<typeof openAudienceCountStore> | undefined;
  try {
    store = openAudienceCountStore(e.data.source);
    postMessage({ counts: await store.countCodes(e.data.q) });
  } catch (err) {
    postMessage({ error: (err as Error).message ?? String(err) });
  } finally {
    store?.close();
  }
};
