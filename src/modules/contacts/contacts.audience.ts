/**
 * Campaign audiences, read by the contacts module for the campaign engine (which never reads contact tables):
 * a tag audience (`any`/`all` of tag names) or an explicit list of contact ids, paged in contact-id order,
 * with the facts a send is decided on (channels/channel.eligibility.ts) and the fields `askValues` render.
 * Storage: audience.repository.ts.
 */
import type { Db } from "../../db/client";
import { AppError, DetailCollector } from "../../platform/errors";
import { countInWorker, factGroups, type AudienceFactGroup, type CountSource } from "./audience-count";
import { audienceStore, type AudienceMember, type AudienceStore } from "./audience.repository";

export type { AudienceFactGroup, AudienceMember };

export type Audience = { type: "tags"; tags: string[]; match?: "any" | "all" } | { type: "contacts"; contactIds: string[] };

/** A resolved audience: what the pages are drawn from. */
export type ResolvedAudience = { type: "tags"; tagIds: string[]; match: "any" | "all" } | { type: "contacts"; contactIds: string[] };

/**
 * Checks an audience against the company's data: unknown tag names and unknown (or deleted) contact ids are
 * 422s pointing at the entry. Returns what `audiencePage` pages through.
 */
export function resolveAudience({
  db,
  companyId,
  audience,
  pointer = "/audience",
  ignoreUnknown = false,
}: {
  db: Db;
  companyId: string;
  audience: Audience;
  pointer?: string;
  /** Skip unknown tags and contacts instead of refusing (a started campaign whose tag was deleted since). */
  ignoreUnknown?: boolean;
}): ResolvedAudience {
  const store = audienceStore(db);
  const p = new DetailCollector();
  if (audience.type === "tags") {
    const names = [...new Set(audience.tags.map((t) => t.trim()))];
    const rows = store.tagsByName(companyId, names);
    const byName = new Map(rows.map((r) => [r.name, r.id]));
    audience.tags.forEach((t, i) => {
      if (!byName.has(t.trim())) p.add(`${pointer}/tags/${i}`, `no tag named "${t}"`);
    });
    if (!ignoreUnknown) p.throwIfAny("The audience names unknown tags");
    return { type: "tags", tagIds: [...byName.values()], match: audience.match ?? "any" };
  }
  const ids = [...new Set(audience.contactIds)];
  const known = new Set(store.liveContactIds(companyId, ids));
  audience.contactIds.forEach((id, i) => {
    if (!known.has(id)) p.add(`${pointer}/contactIds/${i}`, "no such contact");
  });
  if (!ignoreUnknown) p.throwIfAny("The audience names unknown contacts");
  return { type: "contacts", contactIds: ids.filter((id) => known.has(id)).sort() };
}

/** The next `limit` contact ids of the audience after `after` (contact-id order). */
function pageIds(store: AudienceStore, a: ResolvedAudience, after: string, limit: number): string[] {
  if (a.type === "contacts") {
    let lo = 0;
    let hi = a.contactIds.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (a.contactIds[mid]! <= after) lo = mid + 1;
      else hi = mid;
    }
    return a.contactIds.slice(lo, lo + limit);
  }
  if (!a.tagIds.length) return [];
  return store.taggedIdsAfter(a, after, limit);
}

/**
 * One page of an audience with each member's send facts on `channel` / `channelAccountId`. Deleted contacts
 * are skipped (a tombstone has no tags; an id list is checked again here). `after` is the last contact id of
 * the previous page ("" for the first); the page is empty when the audience is exhausted.
 */
export function audiencePage({
  db,
  companyId,
  audience,
  channel,
  channelAccountId,
  after,
  limit,
}: {
  db: Db;
  companyId: string;
  audience: ResolvedAudience;
  channel: string;
  channelAccountId: string;
  after: string;
  limit: number;
}): { members: AudienceMember[]; last: string | null } {
  const store = audienceStore(db);
  const ids = pageIds(store, audience, after, limit);
  if (!ids.length) return { members: [], last: null };
  const members = store.members(ids, companyId, channel, channelAccountId);
  return { members, last: ids[ids.length - 1]! };
}

/**
 * Where the audience-count workers open their own connections: the SQLite file, or the PostgreSQL database;
 * null for an in-memory database (nothing another connection could see).
 */
export function countSource(db: Db): CountSource | null {
  return audienceStore(db).countSource();
}

/**
 * A tag audience counted by send facts (the campaign estimate over a million contacts), in one pass per
 * shard: in two worker threads on connections of their own (each probes half the members, and the event loop
 * stays free for one-to-one sends — on PostgreSQL it would otherwise wait for the server's whole count),
 * inline for an in-memory database or when a worker cannot start.
 */
export async function audienceFactCounts({
  db,
  companyId,
  audience,
  channel,
  channelAccountId,
  since,
  onFallback,
}: {
  db: Db;
  companyId: string;
  audience: Extract<ResolvedAudience, { type: "tags" }>;
  channel: string;
  channelAccountId: string;
  since: number | null;
  /** Told why the count runs on the event loop after all (a worker could not start or failed). */
  onFallback?: (err: unknown) => void;
}): Promise<AudienceFactGroup[]> {
  if (!audience.tagIds.length) return [];
  const q = { companyId, channel, channelAccountId, since, tagIds: audience.tagIds, match: audience.match };
  const store = audienceStore(db);
  const source = store.countSource();
  if (!source) return factGroups(store.countCodes({ ...q, shard: null }));
  try {
    const parts = await Promise.all([0, 1].map((index) => countInWorker(source, { ...q, shard: { of: 2, index } })));
    return factGroups(parts[0]!.map((n, k) => n + parts[1]![k]!));
  } catch (err) {
    onFallback?.(err);
    return factGroups(store.countCodes({ ...q, shard: null }));
  }
}

/** The same facts for a given set of contacts (the fan-out re-checks each claimed recipient at send time). */
export function audienceMembers({
  db,
  companyId,
  contactIds,
  channel,
  channelAccountId,
}: {
  db: Db;
  companyId: string;
  contactIds: string[];
  channel: string;
  channelAccountId: string;
}): AudienceMember[] {
  if (!contactIds.length) return [];
  const sorted = [...contactIds].sort();
  return audiencePage({ db, companyId, audience: { type: "contacts", contactIds: sorted }, channel, channelAccountId, after: "", limit: sorted.length })
    .members;
}

export function assertAudienceSize(audience: Audience, max: number): void {
  if (audience.type === "contacts" && audience.contactIds.length > max)
    throw new AppError("VALIDATION_FAILED", `At most ${max} contact ids`, [
      { pointer: "/audience/contactIds", message: `at most ${max} ids; use a tag audience for more` },
    ]);
}
