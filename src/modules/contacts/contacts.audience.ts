/**
 * Campaign audiences, read by the contacts module for the campaign engine (which never reads contact tables):
 * a tag audience (`any`/`all` of tag names) or an explicit list of contact ids, paged in contact-id order,
 * with the facts a send is decided on (channels/channel.eligibility.ts) and the fields `askValues` render.
 * Storage: audience.repository.ts.
 */
import type { Db } from "../../db/client";
import { AppError, DetailCollector } from "../../platform/errors";
import { countInWorker, type CountQuery, type CountSource } from "./audience-count";
import { factGroups, type AudienceFactGroup } from "./audience-facts.repository";
import { checkFilter, resolveFilter, type CheckedFilter, type FilterNode, type ResolvedFilter } from "./audience-filter";
import { audienceStore, type AudienceMember, type AudienceStore } from "./audience.repository";
import type { Contact } from "./contacts.model";
import type { ContactRow } from "./contacts-rows.repository";
import { contactsStore } from "./contacts.repository";
import { toContacts } from "./contacts.shape";
import { customFieldsStore } from "./custom-fields.repository";

export type { AudienceFactGroup, AudienceMember, FilterNode };

export type Audience =
  | { type: "tags"; tags: string[]; match?: "any" | "all" }
  | { type: "contacts"; contactIds: string[] }
  /** A contact filter (DESIGN §19; audience-filter.ts). */
  | { type: "filter"; filter: unknown };

/** A resolved audience: what the pages are drawn from. */
export type ResolvedAudience =
  | { type: "tags"; tagIds: string[]; match: "any" | "all" }
  | { type: "contacts"; contactIds: string[] }
  | { type: "filter"; filter: ResolvedFilter };

/** What resolving a filter needs besides the database: the instant relative times count back from, a channel's accounts. */
export interface FilterContext {
  now: number;
  /** The company's channel account ids on `channel` (lastInboundAt.<channel>). */
  accountsOf: (channel: string) => string[];
}

/**
 * Checks a filter against the company's custom fields (422 naming each offending node under `pointer`) and
 * returns it with relative times and channels resolved.
 */
export async function checkContactFilter({
  db,
  companyId,
  filter,
  pointer,
  context,
}: {
  db: Db;
  companyId: string;
  filter: unknown;
  pointer: string;
  context: FilterContext;
}): Promise<ResolvedFilter> {
  return resolvedFilterOf(await customFieldsStore(db).customFieldDefs(companyId), filter, pointer, context);
}

function resolvedFilterOf(defs: Map<string, { type: string }>, filter: unknown, pointer: string, context: FilterContext): ResolvedFilter {
  const checked: CheckedFilter = checkFilter(filter, pointer, new Map([...defs].map(([k, d]) => [k, d.type])) as never);
  return resolveFilter(checked, context);
}

/**
 * Checks an audience against the company's data: unknown tag names and unknown (or deleted) contact ids are
 * 422s pointing at the entry. Returns what `audiencePage` pages through.
 */
export async function resolveAudience({
  db,
  companyId,
  audience,
  pointer = "/audience",
  ignoreUnknown = false,
  filterContext,
}: {
  db: Db;
  companyId: string;
  audience: Audience;
  pointer?: string;
  /** Skip unknown tags and contacts instead of refusing (a started campaign whose tag was deleted since). */
  ignoreUnknown?: boolean;
  /** Required for a filter audience. */
  filterContext?: FilterContext;
}): Promise<ResolvedAudience> {
  const store = audienceStore(db);
  const p = new DetailCollector();
  if (audience.type === "filter") {
    if (!filterContext) throw new Error("resolveAudience: a filter audience needs its filterContext");
    return {
      type: "filter",
      filter: await checkContactFilter({ db, companyId, filter: audience.filter, pointer: `${pointer}/filter`, context: filterContext }),
    };
  }
  if (audience.type === "tags") {
    const names = [...new Set(audience.tags.map((t) => t.trim()))];
    const rows = await store.tagsByName(companyId, names);
    const byName = new Map(rows.map((r) => [r.name, r.id]));
    audience.tags.forEach((t, i) => {
      if (!byName.has(t.trim())) p.add(`${pointer}/tags/${i}`, `no tag named "${t}"`);
    });
    if (!ignoreUnknown) p.throwIfAny("The audience names unknown tags");
    return { type: "tags", tagIds: [...byName.values()], match: audience.match ?? "any" };
  }
  const ids = [...new Set(audience.contactIds)];
  const known = new Set(await store.liveContactIds(companyId, ids));
  audience.contactIds.forEach((id, i) => {
    if (!known.has(id)) p.add(`${pointer}/contactIds/${i}`, "no such contact");
  });
  if (!ignoreUnknown) p.throwIfAny("The audience names unknown contacts");
  return { type: "contacts", contactIds: ids.filter((id) => known.has(id)).sort() };
}

/** The next `limit` contact ids of the audience after `after` (contact-id order). */
async function pageIds(store: AudienceStore, companyId: string, a: ResolvedAudience, after: string, limit: number): Promise<string[]> {
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
  if (a.type === "filter") return await store.filteredIds(companyId, a.filter, after, limit, "asc");
  if (!a.tagIds.length) return [];
  return await store.taggedIdsAfter(a, after, limit);
}

/**
 * One page of an audience with each member's send facts on `channel` / `channelAccountId`. Deleted contacts
 * are skipped (a tombstone has no tags; an id list is checked again here). `after` is the last contact id of
 * the previous page ("" for the first); the page is empty when the audience is exhausted.
 */
export async function audiencePage({
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
}): Promise<{ members: AudienceMember[]; last: string | null }> {
  const store = audienceStore(db);
  const ids = await pageIds(store, companyId, audience, after, limit);
  if (!ids.length) return { members: [], last: null };
  const members = await store.members(ids, companyId, channel, channelAccountId);
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
 * A tag or filter audience counted by send facts (the campaign estimate over a million contacts), in one pass per
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
  audience: Extract<ResolvedAudience, { type: "tags" | "filter" }>;
  channel: string;
  channelAccountId: string;
  since: number | null;
  /** Told why the count runs on the event loop after all (a worker could not start or failed). */
  onFallback?: (err: unknown) => void;
}): Promise<AudienceFactGroup[]> {
  return factGroups(await countCodes({ db, audience, q: { companyId, channel, channelAccountId, since }, onFallback }));
}

/**
 * The codes of an audience's members (audience.repository.ts `countAudienceCodes`): the estimate's by send facts,
 * or — `membersOnly` — the members alone (a segment count), on the same path and worker threads.
 */
async function countCodes({
  db,
  audience,
  q: base,
  onFallback,
}: {
  db: Db;
  audience: Extract<ResolvedAudience, { type: "tags" | "filter" }>;
  q: Pick<CountQuery, "companyId" | "channel" | "channelAccountId" | "since" | "membersOnly">;
  onFallback?: (err: unknown) => void;
}): Promise<number[]> {
  const tags = audience.type === "tags" ? audience : { tagIds: [], match: "any" as const };
  if (audience.type === "tags" && !tags.tagIds.length) return [];
  const store = audienceStore(db);
  const filter = audience.type === "filter" ? audience.filter : null;
  const q = { ...base, tagIds: tags.tagIds, match: tags.match, filter };
  // Counted by the database itself where no worker thread can open it (PostgreSQL; SQLite in memory).
  const source = store.countSource();
  if (!source) return store.countCodes({ ...q, shard: null });
  try {
    // A filter is tested row by row: on SQLite each worker takes half the table by seq (read before both start, so
    // the halves meet exactly); a tag audience is sharded by id, as its members come from contact_tags.
    const range = filter ? await store.seqRange() : null;
    const half = range ? range.from + Math.floor((range.to - range.from) / 2) : 0;
    const seqOf = (index: number) => (range ? { seq: index === 0 ? { from: range.from, to: half } : { from: half, to: range.to } } : {});
    const parts = await Promise.all([0, 1].map((index) => countInWorker(source, { ...q, shard: { of: 2, index, ...seqOf(index) } })));
    return parts[0]!.map((n, k) => n + parts[1]![k]!);
  } catch (err) {
    onFallback?.(err);
    return store.countCodes({ ...q, shard: null });
  }
}

/** How many contacts a tag or filter audience holds (a segment count): the estimate's members, without send facts. */
export async function audienceSize({
  db,
  companyId,
  audience,
  onFallback,
}: {
  db: Db;
  companyId: string;
  audience: Extract<ResolvedAudience, { type: "tags" | "filter" }>;
  onFallback?: (err: unknown) => void;
}): Promise<number> {
  const codes = await countCodes({ db, audience, q: { companyId, channel: "", channelAccountId: "", since: null, membersOnly: true }, onFallback });
  return codes.reduce((a, b) => a + b, 0);
}

/**
 * A page of a filter audience's contacts, newest first (GET /segments/{id}/contacts): `limit + 1` rows read,
 * so `more` tells whether there is a next page; `before` is the last id of the previous page.
 */
export async function filterContactsPage({
  db,
  companyId,
  filter,
  before,
  limit,
}: {
  db: Db;
  companyId: string;
  filter: ResolvedFilter;
  before: string | null;
  limit: number;
}): Promise<{ contacts: Contact[]; more: boolean }> {
  const ids = await audienceStore(db).filteredIds(companyId, filter, before, limit + 1, "desc");
  const more = ids.length > limit;
  const contacts = contactsStore(db);
  const rows: ContactRow[] = [];
  for (const id of more ? ids.slice(0, limit) : ids) {
    const r = await contacts.contactById(companyId, id);
    if (r) rows.push(r);
  }
  return { contacts: await toContacts(db, rows), more };
}

/** The same facts for a given set of contacts (the fan-out re-checks each claimed recipient at send time). */
export async function audienceMembers({
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
}): Promise<AudienceMember[]> {
  if (!contactIds.length) return [];
  const sorted = [...contactIds].sort();
  const page = await audiencePage({
    db,
    companyId,
    audience: { type: "contacts", contactIds: sorted },
    channel,
    channelAccountId,
    after: "",
    limit: sorted.length,
  });
  return page.members;
}

export function assertAudienceSize(audience: Audience, max: number): void {
  if (audience.type === "contacts" && audience.contactIds.length > max)
    throw new AppError("VALIDATION_FAILED", `At most ${max} contact ids`, [
      { pointer: "/audience/contactIds", message: `at most ${max} ids; use a tag audience for more` },
    ]);
}
