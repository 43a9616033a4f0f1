/**
 * The audience store: campaign audiences as the contacts module reads them for the campaign engine (which never
 * reads contact tables) — tags and live contacts by name or id, pages of members with their send facts, and
 * the count of a tag audience by send facts, on the instance's connection or, in the audience-count worker
 * thread, on a read-only connection of the worker's own (`openAudienceCountStore`).
 *
 * NB! The page and count queries also read `contact_channel_state` (the conversations module's record of each
 * contact's last inbound message per account): an estimate over a million contacts must come from one indexed
 * pass, and that row is keyed by contact like the rest. It is read-only here; only conversations.service writes it.
 *
 * Kept free of app imports (db/ and type imports only): the audience-count worker thread loads this file.
 */
import { Database } from "bun:sqlite";
import { storeDb, type Db, type Param, type StoreDb } from "../../db/client";
import { compactParams, jsonTable, jsonValues, perEngine } from "../../db/dialect";
import type { CountQuery, CountSource } from "./audience-count";
import type { RawContact } from "./contacts-rows.repository";
import type { ResolvedFilter } from "./audience-filter";
import { compileFilter } from "./audience-filter.repository";
import { FACT_CODES, FACT_WEIGHT, factCodeSql, factJoins, memberFactsSql } from "./audience-facts.repository";
import { perConnection } from "../../db/per-connection";

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

/** A page member: its contact's row (without what a page does not read) and its facts. */
type RawMember = Omit<RawContact, "company_id" | "created_at" | "updated_at"> & {
  identity: string | null;
  consent: string | null;
  last_inbound_at: number | null;
};

/** A page member's facts: the contact row `c`; ?3 the channel, ?4 the account. */
const PAGE_FACTS = memberFactsSql({ id: "c.id", contact: "c" }, { channel: "?3", account: "?4", since: null });

const SQL = perEngine((e) => ({
  tagsByName: `SELECT id, name FROM tags WHERE company_id = ? AND name IN (${jsonValues(e)})`,
  liveContacts: `SELECT id FROM contacts WHERE company_id = ? AND deleted_at IS NULL AND id IN (${jsonValues(e)})`,
  // NB! SQLite: CROSS JOIN fixes the join order — the page's ids drive, each a lookup by contact id. Left to
  // itself the planner scans the company's contacts and probes the id list for each (quadratic in the
  // audience). PostgreSQL has no CROSS JOIN … ON and plans this shape well by itself (a nested loop over the
  // ids); its join does not keep the ids' order, so the page is ordered by id as SQLite returns it.
  page: `SELECT c.id, c.first_name, c.last_name, c.city, c.country, c.custom_fields,
         ${PAGE_FACTS.blocked.value!.sql} AS blocked, ${PAGE_FACTS.identityStatus.value!.sql} AS identity,
         ${PAGE_FACTS.consent.value!.sql} AS consent, ${PAGE_FACTS.lastInbound.value!.sql} AS last_inbound_at
       FROM ${jsonTable(e, "j", "?1")}
       ${e === "sqlite" ? "CROSS JOIN" : "JOIN"} contacts c ON c.id = j.value AND c.company_id = ?2 AND c.deleted_at IS NULL
       ${factJoins(Object.values(PAGE_FACTS).map((f) => f.value))}${
         e === "sqlite"
           ? ""
           : `
       ORDER BY c.id`
       }`,
}));

export function createAudienceStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const sql = SQL[db.engine];
  /** The count on a connection of this process (PostgreSQL: the pool's; SQLite: this connection). */
  const countHere = (q: CountQuery): Promise<number[]> =>
    countAudienceCodes(db.engine === "postgres" ? { engine: "postgres", sql: db.sql } : { engine: "sqlite", sqlite: dbIn.$client }, q);

  return {
    /** The company's tags among `names`. */
    async tagsByName(companyId: string, names: string[]): Promise<{ id: string; name: string }[]> {
      return (await db.sql(sql.tagsByName).all(companyId, JSON.stringify(names))) as { id: string; name: string }[];
    },

    /** The ids among `ids` of the company's contacts that are not deleted. */
    async liveContactIds(companyId: string, ids: string[]): Promise<string[]> {
      return ((await db.sql(sql.liveContacts).all(companyId, JSON.stringify(ids))) as { id: string }[]).map((r) => r.id);
    },

    /** The next `limit` contact ids after `after` (contact-id order) carrying any or all of the tags. */
    async taggedIdsAfter(a: { tagIds: string[]; match: "any" | "all" }, after: string, limit: number): Promise<string[]> {
      const t = taggedIdsText(a);
      const rows = (await db.sql(t.text).all(...t.args(after, limit))) as { id: string }[];
      return rows.map((r) => r.id);
    },

    /**
     * The company's live contacts meeting filter `f`, `limit` ids after `after` in id order (`order: "asc"`, the
     * fan-out's pages) or before `after` newest first (`"desc"`, GET /segments/{id}/contacts; `after` null: from
     * the newest). A walk of contacts_company_idx in that order, the filter tested per row.
     */
    async filteredIds(companyId: string, f: ResolvedFilter, after: string | null, limit: number, order: "asc" | "desc"): Promise<string[]> {
      const q = filteredIdsText(db.engine, companyId, f, after, limit, order);
      // NB! A filter's text differs with its tree; on PostgreSQL only the parameters it numbers are sent.
      const c = db.engine === "postgres" ? compactParams(q.text, q.args) : { sql: q.text, args: q.args };
      return ((await db.sql(c.sql).all(...c.args)) as { id: string }[]).map((r) => r.id);
    },

    /** These contacts (deleted ones skipped), in id order, with their send facts on `channel` / `channelAccountId`. */
    async members(ids: string[], companyId: string, channel: string, channelAccountId: string): Promise<AudienceMember[]> {
      return ((await db.sql(sql.page).all(JSON.stringify(ids), companyId, channel, channelAccountId)) as unknown as RawMember[]).map(memberOf);
    },

    /** The contacts table's seq (rowid) range [from, to) on SQLite, for shards by range of a filter count; null on PostgreSQL. */
    async seqRange(): Promise<{ from: number; to: number } | null> {
      if (db.engine === "postgres") return null;
      const r = (await db.sql(`SELECT min(seq) AS lo, max(seq) AS hi FROM contacts`).get()) as { lo: number | null; hi: number | null };
      return r.lo === null || r.hi === null ? { from: 0, to: 0 } : { from: r.lo, to: r.hi + 1 };
    },

    /**
     * Where the audience-count workers open their own connections: the SQLite file; null on PostgreSQL (the
     * server counts: countCodes) and for an in-memory database (nothing another connection could see).
     */
    countSource(): CountSource | null {
      if (db.engine === "postgres") return null;
      const file = dbIn.$client.filename;
      return file && file !== ":memory:" ? { file } : null;
    },
    /**
     * An audience counted by the database (no worker: countSource is null). PostgreSQL counts it as two shards
     * side by side, on two of the pool's connections.
     */
    async countCodes(q: CountQuery): Promise<number[]> {
      if (db.engine !== "postgres" || q.shard) return countHere(q);
      const parts = await Promise.all([0, 1].map((index) => countHere({ ...q, shard: { of: 2, index } })));
      return parts[0]!.map((n, k) => n + parts[1]![k]!);
    },
  };
}

/** The statement of `taggedIdsAfter` (both stores). */
function taggedIdsText(a: { tagIds: string[]; match: "any" | "all" }): { text: string; args: (after: string, limit: number) => (string | number)[] } {
  if (a.match === "all") {
    const [first, ...rest] = a.tagIds;
    const others = rest.map((_, i) => `AND EXISTS (SELECT 1 FROM contact_tags o WHERE o.contact_id = ct.contact_id AND o.tag_id = ?${i + 4})`).join(" ");
    return {
      text: `SELECT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id = ?1 AND ct.contact_id > ?2 ${others} ORDER BY ct.contact_id LIMIT ?3`,
      args: (after, limit) => [first!, after, limit, ...rest],
    };
  }
  // `any`: one ordered range scan of the tag index per tag, merged (UNION dedups); each arm is limited, so a
  // page costs O(tags × limit) whatever the audience size.
  const arms = a.tagIds.map(
    (_, i) => `SELECT contact_id FROM (SELECT contact_id FROM contact_tags WHERE tag_id = ?${i + 3} AND contact_id > ?1 ORDER BY contact_id LIMIT ?2) a${i}`,
  );
  return { text: `SELECT contact_id AS id FROM (${arms.join(" UNION ")}) u ORDER BY contact_id LIMIT ?2`, args: (after, limit) => [after, limit, ...a.tagIds] };
}

/** The statement of `filteredIds` (both stores). */
function filteredIdsText(
  engine: Db["engine"],
  companyId: string,
  f: ResolvedFilter,
  after: string | null,
  limit: number,
  order: "asc" | "desc",
): { text: string; args: (string | number)[] } {
  const c = compileFilter(engine, f, 4);
  const bound = after === null ? "" : `AND c.id ${order === "asc" ? ">" : "<"} ?2`;
  return {
    text: `SELECT c.id FROM contacts c WHERE c.company_id = ?1 AND c.deleted_at IS NULL ${bound} AND ${c.sql} ORDER BY c.id ${order} LIMIT ?3`,
    args: [companyId, after ?? "", limit, ...c.params],
  };
}

function memberOf(r: RawMember): AudienceMember {
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
}

export type AudienceStore = ReturnType<typeof createAudienceStore>;
/** The audience store of a connection (built on first use). */
export const audienceStore = perConnection(createAudienceStore);

/** Where countAudienceCodes runs its statements: a SQLite connection (the worker's, or the instance's), or a store's db.sql. */
export type CountConnection = { engine: "sqlite"; sqlite: Database } | { engine: "postgres"; sql: StoreDb["sql"] };

/**
 * Counts per code (audience-facts.repository.ts: each member's facts reduced in SQL to one of FACT_CODES
 * combinations), counted here: no row reaches JS as an object and nothing is sorted; a member costs two
 * covering-index probes (identity, consent), plus one of contact_channel_state when the channel's window applies.
 * On any connection: the instance's, or a worker's own (`openAudienceCountStore`).
 */
export async function countAudienceCodes(conn: CountConnection, q: CountQuery): Promise<number[]> {
  const n = new Array<number>(FACT_CODES).fill(0);
  if (!q.filter && !q.tagIds.length) return n;
  const pg = conn.engine === "postgres";
  const shardOf = (id: string) => (q.shard ? `AND ${pg ? `ascii(right(${id}, 1))` : `unicode(substr(${id}, -1))`} % ${q.shard.of} = ${q.shard.index}` : "");
  const shard = shardOf("ct.contact_id");
  const tagParams = q.tagIds.map((_, i) => `?${i + 5}`).join(", ");
  /** The contact `id` has a tag meeting `tag` (`= ?6`, `IN (…)`): a probe of contact_tags' primary key. */
  const tagged = (id: string, tag: string) => `EXISTS (SELECT 1 FROM contact_tags o WHERE o.contact_id = ${id} AND o.tag_id ${tag})`;
  // A filter audience: the company's live contacts meeting the compiled condition (its parameters from ?5), read
  // with their blocked flag (the row is at hand: no correction pass afterwards).
  // The statement holds ?1-?4 (company, channel, account, cut-off); the filter's parameters follow.
  const filter = q.filter ? compileFilter(pg ? "postgres" : "sqlite", q.filter, 5) : null;
  // NB! SQLite: a seq range is a range of the table's own b-tree (seq is the rowid); NOT INDEXED keeps the planner
  // from walking contacts_company_idx instead, which reads every row of the company in each worker.
  const seqRange = !pg && q.shard?.seq ? q.shard.seq : null;
  const members = filter
    ? seqRange
      ? `SELECT c.id AS id, c.blocked AS blocked FROM contacts c NOT INDEXED WHERE c.seq >= ${Math.trunc(seqRange.from)} AND c.seq < ${Math.trunc(seqRange.to)}
           AND c.company_id = ?1 AND c.deleted_at IS NULL AND ${filter.sql}`
      : `SELECT c.id AS id, c.blocked AS blocked FROM contacts c WHERE c.company_id = ?1 AND c.deleted_at IS NULL AND ${filter.sql} ${shardOf("c.id")}`
    : q.match === "all"
      ? `SELECT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id = ?5 ${shard} ${q.tagIds
          .slice(1)
          .map((_, i) => `AND ${tagged("ct.contact_id", `= ?${i + 6}`)}`)
          .join(" ")}`
      : q.tagIds.length === 1
        ? `SELECT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id = ?5 ${shard}`
        : `SELECT DISTINCT ct.contact_id AS id FROM contact_tags ct WHERE ct.tag_id IN (${tagParams}) ${shard}`;
  // Blocked is counted as not blocked where the members are read from their tags (a per-member lookup of it would
  // cost a third of the pass); the blocked members, few and indexed, are moved to their codes afterwards. A filter
  // audience reads the contact row: its blocked flag is at hand.
  const facts = memberFactsSql({ id: "m.id", contact: q.filter ? "m" : null }, { channel: "?2", account: "?3", since: q.since === null ? null : "?4" });
  const code = (from: string) => {
    const c = factCodeSql(facts);
    return `SELECT ${c.sql}
     FROM ${from}
     ${c.joins}`;
  };
  const args = [q.companyId, q.channel, q.channelAccountId, q.since ?? 0, ...(filter ? filter.params : q.tagIds)];
  // PostgreSQL: no INDEXED BY (its planner picks contacts_blocked_idx for the few blocked rows), and every
  // parameter must be used (the member count does not use the company, nor the cut-off without a window).
  const run = async (sql: string): Promise<[number][]> => {
    if (conn.engine === "postgres") {
      const c = compactParams(sql, args);
      return (await conn.sql(c.sql).values(...(c.args as Param[]))) as [number][];
    }
    // NB! A filter's text differs with its tree: prepared for this count only, not kept in the statement cache.
    if (!q.filter) return conn.sqlite.query(sql).values(...(args as never[])) as [number][];
    const st = conn.sqlite.prepare(sql);
    try {
      // (A count of members only may use no parameter past ?1: bun binds exactly as many as the text numbers.)
      return st.values(...(args.slice(0, st.paramsCount) as never[])) as [number][];
    } finally {
      st.finalize();
    }
  };
  if (q.membersOnly) {
    // Members only (a segment count): one number from the engine, no row per member.
    n[0] = Number((await run(`SELECT count(*) FROM (${members}) m`))[0]![0]);
    return n;
  }
  // PostgreSQL counts in SQL: one row per code instead of one per member through the driver (a million rows
  // of text at 1M members were most of the estimate). SQLite counts in JS: its rows cost no copy, and a GROUP BY
  // would sort. Returns [code, members] pairs.
  const counted = async (from: string): Promise<[number, number][]> => {
    if (pg) return (await run(`SELECT x.k, count(*) FROM (${code(from)}) x(k) GROUP BY x.k`)).map((r) => [Number(r[0]), Number((r as unknown[])[1])]);
    const byCode = new Array<number>(FACT_CODES).fill(0);
    for (const [k] of await run(code(from))) byCode[k]!++;
    return byCode.flatMap((c, k): [number, number][] => (c ? [[k, c]] : []));
  };
  for (const [k, c] of await counted(`(${members}) m`)) n[k]! += c;
  if (q.filter) return n;
  // From the blocked contacts to their tags: \`id IN (members)\` built the whole audience first (~270 ms of a
  // shard's ~1.2 s at 1,000,000 members with none blocked).
  const inAudience = q.match === "all" ? q.tagIds.map((_, i) => tagged("c.id", `= ?${i + 5}`)).join(" AND ") : tagged("c.id", `IN (${tagParams})`);
  const blocked = `(SELECT c.id FROM contacts c ${pg ? "" : "INDEXED BY contacts_blocked_idx "}WHERE c.company_id = ?1 AND c.blocked = 1 ${shardOf("c.id")} AND ${inAudience}) m`;
  for (const [k, c] of await counted(blocked)) {
    n[k]! -= c;
    n[k + FACT_WEIGHT.blocked]! += c;
  }
  return n;
}

/**
 * The audience-count worker thread's store, on a read-only connection of its own to the SQLite file (PostgreSQL
 * counts on the instance's pool: the server does the work and the event loop waits for nothing). Close it when done.
 */
export function openAudienceCountStore(source: CountSource): { countCodes(q: CountQuery): Promise<number[]>; close(): void } {
  const sqlite = new Database(source.file, { readonly: true });
  sqlite.exec("PRAGMA busy_timeout = 5000");
  return { countCodes: (q) => countAudienceCodes({ engine: "sqlite", sqlite }, q), close: () => sqlite.close() };
}
