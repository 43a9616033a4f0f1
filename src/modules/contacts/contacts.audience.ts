/**
 * Campaign audiences, read by the contacts module for the campaign engine (which never reads contact tables):
 * a tag audience (`any`/`all` of tag names) or an explicit list of contact ids, paged in contact-id order,
 * with the facts a send is decided on (channels/channel.eligibility.ts) and the fields `askValues` render.
 *
 * NB! The page query also reads `contact_channel_state` (the conversations module's record of each contact's
 * last inbound message per account): an estimate over a million contacts must come from one indexed pass, and
 * that row is keyed by contact like the rest. It is read-only here; only conversations.service writes it.
 */
import type { Database } from "bun:sqlite";
import type { Db } from "../../db/client";
import { jsonTable, jsonValues, perEngine } from "../../db/dialect";
import { AppError, DetailCollector } from "../../platform/errors";
import { countAudienceCodes, countInWorker, factGroups, type AudienceFactGroup, type CountSource } from "./audience-count";

export type { AudienceFactGroup };

const SQL = perEngine((e) => ({
  tagsByName: `SELECT id, name FROM tags WHERE company_id = ? AND name IN (${jsonValues(e)})`,
  liveContacts: `SELECT id FROM contacts WHERE company_id = ? AND deleted_at IS NULL AND id IN (${jsonValues(e)})`,
  // NB! SQLite: CROSS JOIN fixes the join order — the page's ids drive, each a lookup by contact id. Left to
  // itself the planner scans the company's contacts and probes the id list for each (quadratic in the
  // audience). PostgreSQL has no CROSS JOIN … ON and plans this shape well by itself (a nested loop over the
  // ids); its join does not keep the ids' order, so the page is ordered by id as SQLite returns it.
  page: `SELECT c.id, c.first_name, c.last_name, c.city, c.country, c.custom_fields, c.blocked,
         (SELECT i.status || ':' || i.value FROM contact_identities i WHERE i.contact_id = c.id AND i.channel = ?3
            ORDER BY i.status = 'pending', i.created_at, i.value LIMIT 1) AS identity,
         cc.status AS consent, s.last_inbound_at
       FROM ${jsonTable(e, "j", "?1")}
       ${e === "sqlite" ? "CROSS JOIN" : "JOIN"} contacts c ON c.id = j.value AND c.company_id = ?2 AND c.deleted_at IS NULL
       LEFT JOIN contact_consents cc ON cc.contact_id = c.id AND cc.channel = ?3
       LEFT JOIN contact_channel_state s ON s.contact_id = c.id AND s.channel_account_id = ?4${e === "sqlite" ? "" : `
       ORDER BY c.id`}`,
}));

export type Audience = { type: "tags"; tags: string[]; match?: "any" | "all" } | { type: "contacts"; contactIds: string[] };

/** A resolved audience: what the pages are drawn from. */
export type ResolvedAudience = { type: "tags"; tagIds: string[]; match: "any" | "all" } | { type: "contacts"; contactIds: string[] };

export interface AudienceMember {
  contactId: string;
  firstName: string | null;
  lastName: string | null;
  city: string | null;
  country: string | null;
  /** JSON text; parse only when a param needs it. */
  customFields: string;
  blocked: boolean;
  identityValue: string | null;
  identityStatus: string | null;
  consent: string;
  lastInboundAt: number | null;
}

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
  const sqlite = db.$client;
  const sql = SQL[db.engine];
  const p = new DetailCollector();
  if (audience.type === "tags") {
    const names = [...new Set(audience.tags.map((t) => t.trim()))];
    const rows = sqlite
      .query(sql.tagsByName)
      .all(companyId, JSON.stringify(names)) as { id: string; name: string }[];
    const byName = new Map(rows.map((r) => [r.name, r.id]));
    audience.tags.forEach((t, i) => {
      if (!byName.has(t.trim())) p.add(`${pointer}/tags/${i}`, `no tag named "${t}"`);
    });
    if (!ignoreUnknown) p.throwIfAny("The audience names unknown tags");
    return { type: "tags", tagIds: [...byName.values()], match: audience.match ?? "any" };
  }
  const ids = [...new Set(audience.contactIds)];
  const known = new Set(
    (
      sqlite
        .query(sql.liveContacts)
        .all(companyId, JSON.stringify(ids)) as { id: string }[]
    ).map((r) => r.id),
  );
  audience.contactIds.forEach((id, i) => {
    if (!known.has(id)) p.add(`${pointer}/contactIds/${i}`, "no such contact");
  });
  if (!ignoreUnknown) p.throwIfAny("The audience names unknown contacts");
  return { type: "contacts", contactIds: ids.filter((id) => known.has(id)).sort() };
}

/** The next `limit` contact ids of the audience after `after` (contact-id order). */
function pageIds(sqlite: Database, a: ResolvedAudience, after: string, limit: number): string[] {
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
  if (a.match === "all") {
    const [first, ...rest] = a.tagIds;
    const others = rest.map((_, i) => `AND EXISTS (SELECT 1 FROM contact_tags o WHERE o.contact_id = ct.contact_id AND o.tag_id = ?${i + 4})`).join(" ");
    return (
      sqlite.query(`SELECT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id = ?1 AND ct.contact_id > ?2 ${others} ORDER BY ct.contact_id LIMIT ?3`).all(first!, after, limit, ...rest) as {
        id: string;
      }[]
    ).map((r) => r.id);
  }
  // `any`: one ordered range scan of the tag index per tag, merged (UNION dedups); each arm is limited, so a
  // page costs O(tags × limit) whatever the audience size.
  const arms = a.tagIds.map((_, i) => `SELECT contact_id FROM (SELECT contact_id FROM contact_tags WHERE tag_id = ?${i + 3} AND contact_id > ?1 ORDER BY contact_id LIMIT ?2) a${i}`);
  return (sqlite.query(`SELECT contact_id AS id FROM (${arms.join(" UNION ")}) u ORDER BY contact_id LIMIT ?2`).all(after, limit, ...a.tagIds) as { id: string }[]).map((r) => r.id);
}

type RawMember = {
  id: string;
  first_name: string | null;
  last_name: string | null;
  city: string | null;
  country: string | null;
  custom_fields: string;
  blocked: number;
  identity: string | null;
  consent: string | null;
  last_inbound_at: number | null;
};

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
  const sqlite = db.$client;
  const ids = pageIds(sqlite, audience, after, limit);
  if (!ids.length) return { members: [], last: null };
  const rows = sqlite.query(SQL[db.engine].page).all(JSON.stringify(ids), companyId, channel, channelAccountId) as RawMember[];
  const members = rows.map((r) => {
    const colon = r.identity ? r.identity.indexOf(":") : -1;
    return {
      contactId: r.id,
      firstName: r.first_name,
      lastName: r.last_name,
      city: r.city,
      country: r.country,
      customFields: r.custom_fields,
      blocked: r.blocked === 1,
      identityStatus: r.identity ? r.identity.slice(0, colon) : null,
      identityValue: r.identity ? r.identity.slice(colon + 1) : null,
      consent: r.consent ?? "unknown",
      lastInboundAt: r.last_inbound_at,
    };
  });
  return { members, last: ids[ids.length - 1]! };
}

/**
 * Where the audience-count workers open their own connections: the SQLite file, or the PostgreSQL database;
 * null for an in-memory database (nothing another connection could see).
 */
export function countSource(db: Db): CountSource | null {
  if (db.engine === "postgres") return db.url ? { url: db.url } : null;
  const file = db.$client.filename;
  return file && file !== ":memory:" ? { file } : null;
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
  const source = countSource(db);
  if (!source) return factGroups(countAudienceCodes(db.$client, { ...q, shard: null }));
  try {
    const parts = await Promise.all([0, 1].map((index) => countInWorker(source, { ...q, shard: { of: 2, index } })));
    return factGroups(parts[0]!.map((n, k) => n + parts[1]![k]!));
  } catch (err) {
    onFallback?.(err);
    return factGroups(countAudienceCodes(db.$client, { ...q, shard: null }));
  }
}

/** The same facts for a given set of contacts (the fan-out re-checks each claimed recipient at send time). */
export function audienceMembers({ db, companyId, contactIds, channel, channelAccountId }: { db: Db; companyId: string; contactIds: string[]; channel: string; channelAccountId: string }): AudienceMember[] {
  if (!contactIds.length) return [];
  const sorted = [...contactIds].sort();
  return audiencePage({ db, companyId, audience: { type: "contacts", contactIds: sorted }, channel, channelAccountId, after: "", limit: sorted.length }).members;
}

export function assertAudienceSize(audience: Audience, max: number): void {
  if (audience.type === "contacts" && audience.contactIds.length > max)
    throw new AppError("VALIDATION_FAILED", `At most ${max} contact ids`, [{ pointer: "/audience/contactIds", message: `at most ${max} ids; use a tag audience for more` }]);
}
