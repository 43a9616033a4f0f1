/**
 * Counting a tag audience by send facts (contacts.audience.ts `audienceFactCounts`): each member's facts
 * reduced in SQL to one of 54 combinations, counted here. No row reaches JS as an object and nothing is
 * sorted; a member costs two covering-index probes (identity, consent), plus one of contact_channel_state when
 * the channel's window applies. Kept free of app imports (db/dialect.ts is a leaf): the audience-count worker
 * thread runs it too.
 */
import { Database } from "bun:sqlite";
import { compactParams, engineOf } from "../../db/dialect";

/** Send facts of a group of audience members. */
export interface AudienceFactGroup {
  /** The best identity's status on the channel (`verified` before any other), or null. */
  identityStatus: "verified" | "pending" | null;
  blocked: boolean;
  consent: "opted_in" | "opted_out" | "unknown";
  /** Last inbound message on the account: never, before the window's cut-off, or since it. */
  lastInbound: "never" | "before" | "since";
  n: number;
}

export interface CountQuery {
  companyId: string;
  channel: string;
  channelAccountId: string;
  /** The window's cut-off (ms); null: the window does not apply, every member counts `never`. */
  since: number | null;
  tagIds: string[];
  match: "any" | "all";
  /** Only the members whose id's last character falls in this shard (UUID v7: random, so even). */
  shard: { of: number; index: number } | null;
}

const CODES = 54;

/** Counts per code: identity × 18 + blocked × 9 + consent × 3 + last inbound. */
export function countAudienceCodes(sqlite: Database, q: CountQuery): number[] {
  const n = new Array<number>(CODES).fill(0);
  if (!q.tagIds.length) return n;
  const pg = engineOf(sqlite) === "postgres";
  const shardOf = (id: string) => (q.shard ? `AND ${pg ? `ascii(right(${id}, 1))` : `unicode(substr(${id}, -1))`} % ${q.shard.of} = ${q.shard.index}` : "");
  const shard = shardOf("ct.contact_id");
  const tagParams = q.tagIds.map((_, i) => `?${i + 5}`).join(", ");
  /** The contact `id` has a tag meeting `tag` (`= ?6`, `IN (…)`): a probe of contact_tags' primary key. */
  const tagged = (id: string, tag: string) => `EXISTS (SELECT 1 FROM contact_tags o WHERE o.contact_id = ${id} AND o.tag_id ${tag})`;
  const members =
    q.match === "all"
      ? `SELECT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id = ?5 ${shard} ${q.tagIds
          .slice(1)
          .map((_, i) => `AND ${tagged("ct.contact_id", `= ?${i + 6}`)}`)
          .join(" ")}`
      : q.tagIds.length === 1
        ? `SELECT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id = ?5 ${shard}`
        : `SELECT DISTINCT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id IN (${tagParams}) ${shard}`;
  const window =
    q.since === null
      ? "0"
      : `coalesce((SELECT CASE WHEN s.last_inbound_at > ?4 THEN 2 ELSE 1 END FROM contact_channel_state s WHERE s.contact_id = m.id AND s.channel_account_id = ?3), 0)`;
  // Blocked is counted as not blocked (a per-member lookup of it would cost a third of the pass); the blocked
  // members, few and indexed, are moved to their codes afterwards.
  const code = (from: string) =>
    `SELECT coalesce((SELECT min(CASE i.status WHEN 'verified' THEN 0 ELSE 1 END) FROM contact_identities i WHERE i.contact_id = m.id AND i.channel = ?2), 2) * 18
       + coalesce(CASE cc.status WHEN 'opted_in' THEN 0 WHEN 'opted_out' THEN 1 ELSE 2 END, 2) * 3
       + ${window}
     FROM ${from}
     LEFT JOIN contact_consents cc ON cc.contact_id = m.id AND cc.channel = ?2`;
  const args = [q.companyId, q.channel, q.channelAccountId, q.since ?? 0, ...q.tagIds];
  // PostgreSQL: no INDEXED BY (its planner picks contacts_blocked_idx for the few blocked rows), and every
  // parameter must be used (the member count does not use the company, nor the cut-off without a window).
  const run = (sql: string) => {
    if (!pg) return sqlite.query(sql).values(...args) as [number][];
    const c = compactParams(sql, args);
    return sqlite.query(c.sql).values(...c.args) as [number][];
  };
  for (const [k] of run(code(`(${members}) m`))) n[k]!++;
  // From the blocked contacts to their tags: \`id IN (members)\` built the whole audience first (~270 ms of a
  // shard's ~1.2 s at 1,000,000 members with none blocked).
  const inAudience = q.match === "all" ? q.tagIds.map((_, i) => tagged("c.id", `= ?${i + 5}`)).join(" AND ") : tagged("c.id", `IN (${tagParams})`);
  const blocked = `(SELECT c.id FROM contacts c ${pg ? "" : "INDEXED BY contacts_blocked_idx "}WHERE c.company_id = ?1 AND c.blocked = 1 ${shardOf("c.id")} AND ${inAudience}) m`;
  for (const [k] of run(code(blocked))) {
    n[k]!--;
    n[k + 9]!++;
  }
  return n;
}

export function factGroups(n: number[]): AudienceFactGroup[] {
  const groups: AudienceFactGroup[] = [];
  n.forEach((count, code) => {
    if (!count) return;
    groups.push({
      identityStatus: (["verified", "pending", null] as const)[Math.floor(code / 18)]!,
      blocked: Math.floor(code / 9) % 2 === 1,
      consent: (["opted_in", "opted_out", "unknown"] as const)[Math.floor(code / 3) % 3]!,
      lastInbound: (["never", "before", "since"] as const)[code % 3]!,
      n: count,
    });
  });
  return groups;
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
export type CountSource = { file: string } | { url: string };

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
