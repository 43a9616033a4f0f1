/**
 * Counting a tag audience by send facts (contacts.audience.ts `audienceFactCounts`): the query, the shards and
 * their worker threads (audience-count.worker.ts). The facts of each code the count's SQL reduces a member to
 * (audience.repository.ts `countAudienceCodes`) are audience-facts.repository.ts'.
 */
import type { ResolvedFilter } from "./audience-filter";

export interface CountQuery {
  companyId: string;
  channel: string;
  channelAccountId: string;
  /** The window's cut-off (ms); null: the window does not apply, every member counts `never`. */
  since: number | null;
  tagIds: string[];
  match: "any" | "all";
  /** Members only, no send facts (a segment count): all of them under code 0, counted by the engine. */
  membersOnly?: boolean;
  /** A filter audience (segments): the members are the contacts meeting it; `tagIds` is then unused. */
  filter?: ResolvedFilter | null;
  /**
   * Only the members whose id's last character falls in this shard (UUID v7: random, so even) — or, for a filter
   * audience on SQLite, whose row is in `seq` range [from, to): each worker then reads half the table instead of
   * all of it and testing half.
   */
  shard: { of: number; index: number; seq?: { from: number; to: number } } | null;
}

/**
 * Where the worker's entry point is. NB! In the compiled binary the worker is an entry point of its own
 * (Makefile) at modules/contacts/audience-count.worker.ts under the bundle's root; from source it is beside
 * this file.
 */
function workerUrl(): string {
  return new URL(Bun.isStandaloneExecutable ? "./modules/contacts/audience-count.worker.ts" : "./audience-count.worker.ts", import.meta.url).href;
}

/** What a worker thread opens for a connection of its own: the SQLite file (read-only), or the PostgreSQL database. */
export type CountSource = { file: string };

/** One shard counted in a worker thread on its own read-only connection to `source`. */
export function countInWorker(source: CountSource, q: CountQuery): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerUrl());
    const done = (f: () => void) => {
      worker.terminate();
      f();
    };
    worker.onmessage = (e: MessageEvent<{ counts?: number[]; error?: string }>) =>
      done(() => (e.data.counts ? resolve(e.data.counts) : reject(new Error(e.data.error ?? "audience count failed"))));
    worker.onerror = (e) => done(() => reject(new Error(e.message)));
    worker.postMessage({ source, q });
  });
}
