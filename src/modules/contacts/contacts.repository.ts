/**
 * The contacts store: contacts, their identities, consent (and its history) and the name search index.
 * Raw prepared statements on the one connection (`query()` caches each statement by its text): the upsert and
 * import paths run thousands of these per second, so this file skips the query builder; the drizzle tables in
 * *.table.ts remain the schema of record. Every function is asynchronous (issue 35's store contract: one
 * awaited statement each) and meant to run inside the caller's unit; none starts or ends a transaction.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { storeDb, type Db, type StoreDb } from "../../db/client";
import { jsonValues, perEngine, type Engine } from "../../db/dialect";
import { CHANNELS } from "../../channels/channel.types";
import { newId } from "../../platform/ids";
import type { ConsentSource } from "./contacts.model";
import { perConnection } from "../../db/per-connection";

export interface ContactRow {
  id: string;
  companyId: string;
  firstName: string | null;
  lastName: string | null;
  city: string | null;
  country: string | null;
  customFields: Record<string, unknown>;
  blocked: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface IdentityRow {
  companyId: string;
  contactId: string;
  channel: string;
  value: string;
  status: "verified" | "pending";
  createdAt: Date;
}

export interface ConsentRow {
  contactId: string;
  channel: string;
  status: "opted_in" | "opted_out";
  source: string;
  updatedAt: number;
}

/** GET /contacts' filters, checked (contacts.list.ts); `tagIds` are the filter's tags found by name. */
export interface ContactListQuery {
  companyId: string;
  tagIds: string[];
  tagMatch?: "any" | "all";
  channel?: string;
  /** [channel, opted_in | opted_out | unknown] */
  consent?: [string, string];
  q?: string;
  createdAfter?: number;
  updatedAfter?: number;
  before?: string;
  limit: number;
}

interface RawContact {
  id: string;
  company_id: string;
  first_name: string | null;
  last_name: string | null;
  city: string | null;
  country: string | null;
  custom_fields: string;
  blocked: number;
  created_at: number;
  updated_at: number;
}

interface RawIdentity {
  company_id: string;
  contact_id: string;
  channel: string;
  value: string;
  status: "verified" | "pending";
  created_at: number;
}

const CONTACT_COLUMNS = "c.id, c.company_id, c.first_name, c.last_name, c.city, c.country, c.custom_fields, c.blocked, c.created_at, c.updated_at";

function toContactRow(r: RawContact): ContactRow {
  return {
    id: r.id,
    companyId: r.company_id,
    firstName: r.first_name,
    lastName: r.last_name,
    city: r.city,
    country: r.country,
    customFields: JSON.parse(r.custom_fields),
    blocked: r.blocked === 1,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

const toIdentityRow = (r: RawIdentity): IdentityRow => ({
  companyId: r.company_id,
  contactId: r.contact_id,
  channel: r.channel,
  value: r.value,
  status: r.status,
  createdAt: new Date(r.created_at),
});

/** Verified before pending, then oldest, then by value. */
function identityRank(a: RawIdentity, b: RawIdentity): number {
  const pa = a.status === "pending" ? 1 : 0;
  const pb = b.status === "pending" ? 1 : 0;
  if (pa !== pb) return pa - pb;
  if (a.created_at !== b.created_at) return a.created_at - b.created_at;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

const CHANNEL_LIST = CHANNELS.map((c) => `'${c}'`).join(", ");
const TOP = "\u{10FFFF}";

/**
 * The statements whose text differs by engine. Name search (GET /contacts `q`): SQLite's FTS5 table
 * contact_search; PostgreSQL's GIN index contacts_name_search_idx on switchboard_name_tsvector(first_name,
 * last_name), which the condition must repeat exactly to use it (migrations-pg/0005: the same words, case and
 * accent folding as FTS5's). Both take what `nameMatch` builds for the engine.
 */
const SQL = perEngine((e) => ({
  // NB! The same text as contactById on SQLite (one prepared statement); the lock only on PostgreSQL (holdContact).
  holdContact: `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.id = ? AND c.company_id = ? AND c.deleted_at IS NULL${e === "sqlite" ? "" : " FOR KEY SHARE"}`,
  lockForMerge: `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.id IN (?1, ?2) AND c.company_id = ?3 AND c.deleted_at IS NULL ORDER BY c.id${e === "sqlite" ? "" : " FOR UPDATE"}`,
  identitiesOf: `SELECT * FROM contact_identities WHERE contact_id IN (${jsonValues(e)}) ORDER BY contact_id, channel, created_at, value`,
  consentsOf: `SELECT contact_id AS "contactId", channel, status, source, updated_at AS "updatedAt" FROM contact_consents
       WHERE contact_id IN (${jsonValues(e)})`,
  anyTag: `c.id IN (SELECT contact_id FROM contact_tags WHERE tag_id IN (${jsonValues(e)}))`,
  nameMatch:
    e === "sqlite"
      ? "c.seq IN (SELECT rowid FROM contact_search WHERE contact_search MATCH ?)"
      : "c.id IN (SELECT s.id FROM contacts s WHERE switchboard_name_tsvector(s.first_name, s.last_name) @@ switchboard_name_tsquery(?))",
}));

/**
 * A name query: every word of `q` as a prefix term, all required; null when `q` has no word. Words split
 * where the index's tokenizer (unicode61) splits — at anything but letters, marks and digits — because a
 * quoted string of two tokens would be a phrase, which the index (detail=none) does not keep. SQLite: an
 * FTS5 query (`"ann"* "sm"*`); PostgreSQL: the words, space-separated, which switchboard_name_tsquery folds
 * as the index does and turns into a tsquery (`'ann':* & 'sm':*`).
 */
function nameMatch(q: string, engine: Engine): string | null {
  const words = q.split(/[^\p{L}\p{M}\p{N}]+/u).filter(Boolean);
  if (!words.length) return null;
  return engine === "sqlite" ? words.map((w) => `"${w}"*`).join(" ") : words.join(" ");
}

/**
 * An import transaction's writes held on PostgreSQL (contact-imports.service.ts), sent as a few multi-row
 * statements when it ends instead of one round trip per row: the rows' new contacts, their identities, consent
 * and history, and their tag links (tags.repository.ts `addContactTags`). While held, `identityByValue` answers
 * from the owners of the batch's identities read in one statement beforehand (and kept up to date by
 * `insertIdentity`), and `consentOf` answers for the contacts created in the batch from what is held. Every
 * other store call sends what is held first, so nothing reads past a held row.
 * NB! Held by the import's own chain of awaits (AsyncLocalStorage, `withImportWrites`), not by the connection:
 * on PostgreSQL units run side by side, and an API upsert running beside the import must neither answer from
 * the import's owners nor have its rows held (and sent) by the import's transaction — nor send the import's
 * rows in its own (what a per-Db state did: rows of one transaction written by another, which then waited on
 * each other's locks).
 * NB! Errors of held rows (a constraint) surface when they are sent, at the end: the whole transaction fails,
 * which the import redoes row by row in safe mode (nothing held there) — as for any other non-CONFLICT failure.
 * NB! Not for code that rolls back to a savepoint: held rows written after it would survive the rollback.
 */
export interface HeldImportWrites {
  /** The connection (Db) whose unit holds them: a chain reaching another Db's stores does not see them. */
  db: Db;
  companyId: string;
  /** `channel \0 value` → its identity row, or null when none (the batch's identities, then what it inserts). */
  owners: Map<string, RawIdentity | null>;
  /** Contacts inserted while held: no consent or tag link of theirs exists but what is held. */
  created: Set<string>;
  contacts: unknown[][];
  identities: unknown[][];
  /** `contact \0 channel` → [contact, channel, company, status, source, at]: the last write of each wins, as it would row by row. */
  consents: Map<string, [string, string, string, "opted_in" | "opted_out", string, number]>;
  history: unknown[][];
  links: unknown[][];
  /** Tag ids linked (held) per created contact. */
  linked: Map<string, Set<string>>;
  /** Sent or dropped: work the chain started that outlives `withImportWrites` (tracked subscribers) writes at once. */
  ended: boolean;
}

const holding = new AsyncLocalStorage<HeldImportWrites>();

/** The writes the caller's chain holds on this connection (PostgreSQL, inside `withImportWrites`), else null. */
export function heldImportWritesOf(db: Db): HeldImportWrites | null {
  const h = holding.getStore();
  return h !== undefined && h.db === db && !h.ended ? h : null;
}

/** The multi-row statements of held writes (PostgreSQL): one JSON array parameter of row arrays each, in order. */
const rowsOf = "jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(v, n)";
const HELD_SQL = {
  // NB! A primary-key probe per key, kept so by LIMIT 1 (a LATERAL subquery with a LIMIT is not flattened): as a
  // join, the planner — which guesses 100 elements for the array — hashed the keys and read every identity of the
  // company for each batch (24 ms a batch at 40,000 identities, growing with the company).
  owners: `SELECT i.* FROM json_array_elements(?1::json) AS e(v),
     LATERAL (SELECT * FROM contact_identities x WHERE x.company_id = ?2 AND x.channel = e.v->>0 AND x.value = e.v->>1 LIMIT 1) i`,
  contacts: `INSERT INTO contacts (id, company_id, first_name, last_name, city, country, custom_fields, blocked, created_at, updated_at)
     SELECT v->>0, v->>1, v->>2, v->>3, v->>4, v->>5, v->>6, 0, (v->>7)::bigint, (v->>7)::bigint FROM ${rowsOf} ORDER BY n`,
  identities: `INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at)
     SELECT v->>0, v->>1, v->>2, v->>3, v->>4, (v->>5)::bigint FROM ${rowsOf} ORDER BY n`,
  consents: `INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at)
     SELECT v->>0, v->>1, v->>2, v->>3, v->>4, (v->>5)::bigint FROM ${rowsOf} ORDER BY n
     ON CONFLICT (contact_id, channel) DO UPDATE SET status = excluded.status, source = excluded.source, updated_at = excluded.updated_at`,
  history: `INSERT INTO consent_history (id, company_id, contact_id, channel, status, source, created_at)
     SELECT v->>0, v->>1, v->>2, v->>3, v->>4, v->>5, (v->>6)::bigint FROM ${rowsOf} ORDER BY n`,
  links: `INSERT INTO contact_tags (contact_id, tag_id, created_at) SELECT v->>0, v->>1, (v->>2)::bigint FROM ${rowsOf} ORDER BY n ON CONFLICT DO NOTHING`,
};

const identityKey = (channel: string, value: string) => `${channel}\0${value}`;

/**
 * Sends what is held, and empties it (taken synchronously first: a second chain of the same unit that sends
 * meanwhile finds nothing to send twice). The statements go out together, in order, on the unit's connection —
 * one pipelined round trip — each after the rows it refers to (contacts before identities, consent and links).
 */
export async function sendHeldImportWrites(db: StoreDb, h: HeldImportWrites): Promise<void> {
  const batches: [string, unknown[]][] = [
    [HELD_SQL.contacts, h.contacts],
    [HELD_SQL.identities, h.identities],
    [HELD_SQL.consents, [...h.consents.values()]],
    [HELD_SQL.history, h.history],
    [HELD_SQL.links, h.links],
  ];
  // What was held is stored now: the created contacts are read from the database again (the owners map stays
  // true — it already holds what was inserted).
  h.contacts = [];
  h.identities = [];
  h.consents = new Map();
  h.history = [];
  h.links = [];
  h.created = new Set();
  h.linked = new Map();
  const sent = batches.filter(([, rows]) => rows.length).map(([text, rows]) => db.sql(text).run(JSON.stringify(rows)));
  await Promise.all(sent);
}

function contactsStoreOn(db: StoreDb) {
  const engine = db.engine;
  const sql = SQL[engine];
  const onSqlite = engine === "sqlite";

  const store = {
    async contactById(companyId: string, id: string): Promise<ContactRow | undefined> {
      const r = (await db
        .sql(`SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.id = ? AND c.company_id = ? AND c.deleted_at IS NULL`)
        .get(id, companyId)) as RawContact | null;
      return r ? toContactRow(r) : undefined;
    },

    /**
     * contactById for a write that attaches rows to the contact (a send's message and conversation, an upsert's
     * identity, a consent): on PostgreSQL the row is held (FOR KEY SHARE) until the caller's unit ends, so a merge
     * or a delete (`lockForMerge`, FOR UPDATE) cannot move or erase the contact's rows while they are being
     * written, and one that got there first is waited for — then the contact is gone (undefined) and the caller
     * looks again for where its identity went. Sends to one contact do not wait for each other (key-share locks
     * share), nor for its ordinary updates. SQLite: contactById (one writer; nothing runs beside the unit).
     */
    async holdContact(companyId: string, id: string): Promise<ContactRow | undefined> {
      const r = (await db.sql(sql.holdContact).get(id, companyId)) as RawContact | null;
      return r ? toContactRow(r) : undefined;
    },

    /**
     * The two contacts of a merge, locked (PostgreSQL: FOR UPDATE, in id order so that two merges of overlapping
     * contacts cannot deadlock) before the merge reads or moves any of their rows: every unit holding one of them
     * (`holdContact`: a send, an upsert) has committed by then, so the merge sees what it wrote, and every later
     * one waits for the merge and finds the merged-away contact gone. Undefined for one unknown, foreign or deleted.
     */
    async lockForMerge(companyId: string, targetId: string, sourceId: string): Promise<{ target?: ContactRow; source?: ContactRow }> {
      const rows = ((await db.sql(sql.lockForMerge).all(targetId, sourceId, companyId)) as unknown as RawContact[]).map(toContactRow);
      return { target: rows.find((r) => r.id === targetId), source: rows.find((r) => r.id === sourceId) };
    },

    /** One contact locked as `lockForMerge` locks two, for its erasure (DELETE /contacts/{id}). */
    async lockForErase(companyId: string, id: string): Promise<ContactRow | undefined> {
      const r = (await db.sql(sql.lockForMerge).get(id, id, companyId)) as RawContact | null;
      return r ? toContactRow(r) : undefined;
    },

    /** The company a contact id belongs to (deleted ones too). */
    async companyOf(contactId: string): Promise<string | undefined> {
      return ((await db.sql(`SELECT company_id AS "companyId" FROM contacts WHERE id = ?`).get(contactId)) as { companyId: string } | null)?.companyId;
    },

    async identityByValue(companyId: string, channel: string, value: string): Promise<IdentityRow | undefined> {
      const r = (await db
        .sql(`SELECT * FROM contact_identities WHERE company_id = ? AND channel = ? AND value = ?`)
        .get(companyId, channel, value)) as RawIdentity | null;
      return r ? toIdentityRow(r) : undefined;
    },

    /** The contact's identity on a channel: verified before pending, oldest first. */
    async identityOfContact(contactId: string, channel: string): Promise<IdentityRow | undefined> {
      // Ordered here, not by SQL: a contact has one or two identities on a channel, and the ORDER BY's temp
      // b-tree cost 10 µs against 2 µs for the plain index search (the send path asks this on every message).
      const rows = (await db.sql(`SELECT * FROM contact_identities WHERE contact_id = ? AND channel = ?`).all(contactId, channel)) as unknown as RawIdentity[];
      let best: RawIdentity | undefined;
      for (const r of rows) if (!best || identityRank(r, best) < 0) best = r;
      return best ? toIdentityRow(best) : undefined;
    },

    async identitiesOf(contactIds: string[]): Promise<IdentityRow[]> {
      if (!contactIds.length) return [];
      return ((await db.sql(sql.identitiesOf).all(JSON.stringify(contactIds))) as unknown as RawIdentity[]).map(toIdentityRow);
    },

    async consentsOf(contactIds: string[]): Promise<ConsentRow[]> {
      if (!contactIds.length) return [];
      return (await db.sql(sql.consentsOf).all(JSON.stringify(contactIds))) as unknown as ConsentRow[];
    },

    async consentOf(contactId: string, channel: string): Promise<ConsentRow | undefined> {
      return (
        ((await db
          .sql(
            `SELECT contact_id AS "contactId", channel, status, source, updated_at AS "updatedAt" FROM contact_consents WHERE contact_id = ? AND channel = ?`,
          )
          .get(contactId, channel)) as ConsentRow | null) ?? undefined
      );
    },

    async insertContact(c: {
      id: string;
      companyId: string;
      firstName: string | null;
      lastName: string | null;
      city: string | null;
      country: string | null;
      customFields: Record<string, unknown>;
      at: number;
    }): Promise<void> {
      await db
        .sql(
          `INSERT INTO contacts (id, company_id, first_name, last_name, city, country, custom_fields, blocked, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
        )
        .run(c.id, c.companyId, c.firstName, c.lastName, c.city, c.country, JSON.stringify(c.customFields), c.at, c.at);
    },

    async updateContactFields(
      id: string,
      f: {
        firstName: string | null;
        lastName: string | null;
        city: string | null;
        country: string | null;
        customFields: Record<string, unknown>;
        blocked: boolean;
        at: number;
      },
    ): Promise<void> {
      await db
        .sql(`UPDATE contacts SET first_name = ?, last_name = ?, city = ?, country = ?, custom_fields = ?, blocked = ?, updated_at = ? WHERE id = ?`)
        .run(f.firstName, f.lastName, f.city, f.country, JSON.stringify(f.customFields), f.blocked ? 1 : 0, f.at, id);
    },

    /** Sets both names of a contact that has neither; returns whether it wrote. */
    async fillNames(contactId: string, firstName: string, lastName: string | null, at: number): Promise<boolean> {
      const res = await db
        .sql(`UPDATE contacts SET first_name = ?, last_name = ?, updated_at = ? WHERE id = ? AND first_name IS NULL AND last_name IS NULL`)
        .run(firstName, lastName, at, contactId);
      return res.changes > 0;
    },

    async touchContact(id: string, at: number): Promise<void> {
      await db.sql(`UPDATE contacts SET updated_at = ? WHERE id = ?`).run(at, id);
    },

    async insertIdentity(i: { companyId: string; contactId: string; channel: string; value: string; status: string; at: number }): Promise<IdentityRow> {
      await db
        .sql(`INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
        .run(i.companyId, i.contactId, i.channel, i.value, i.status, i.at);
      return { companyId: i.companyId, contactId: i.contactId, channel: i.channel, value: i.value, status: i.status as "verified", createdAt: new Date(i.at) };
    },

    /** A pending `@username` identity becomes the verified platform user id. */
    async resolveIdentity(pending: IdentityRow, value: string): Promise<void> {
      await db
        .sql(`UPDATE contact_identities SET value = ?, status = 'verified' WHERE company_id = ? AND channel = ? AND value = ?`)
        .run(value, pending.companyId, pending.channel, pending.value);
    },

    async deleteIdentity(i: IdentityRow): Promise<void> {
      await db.sql(`DELETE FROM contact_identities WHERE company_id = ? AND channel = ? AND value = ?`).run(i.companyId, i.channel, i.value);
    },

    async writeConsent(c: {
      companyId: string;
      contactId: string;
      channel: string;
      status: "opted_in" | "opted_out";
      source: ConsentSource;
      at: number;
    }): Promise<void> {
      await db
        .sql(
          `INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (contact_id, channel) DO UPDATE SET status = excluded.status, source = excluded.source, updated_at = excluded.updated_at`,
        )
        .run(c.contactId, c.channel, c.companyId, c.status, c.source, c.at);
      await db
        .sql(`INSERT INTO consent_history (id, company_id, contact_id, channel, status, source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
        .run(newId(), c.companyId, c.contactId, c.channel, c.status, c.source, c.at);
    },

    /**
     * Erases personal data and every satellite row (its tag links, tags.repository's table, included: one
     * erasure, in this order); the contact row stays as a tombstone.
     */
    async eraseContact(id: string, at: number): Promise<void> {
      await db.sql(`DELETE FROM contact_identities WHERE contact_id = ?`).run(id);
      await db.sql(`DELETE FROM contact_tags WHERE contact_id = ?`).run(id);
      await db.sql(`DELETE FROM contact_consents WHERE contact_id = ?`).run(id);
      await db.sql(`DELETE FROM consent_history WHERE contact_id = ?`).run(id);
      await db
        .sql(
          `UPDATE contacts SET first_name = NULL, last_name = NULL, city = NULL, country = NULL, custom_fields = '{}', blocked = 0,
       updated_at = ?, deleted_at = ? WHERE id = ?`,
        )
        .run(at, at, id);
    },

    /**
     * GET /contacts: keyset pagination newest first (ids are UUID v7), `limit + 1` rows (the caller tells from
     * the extra one that there are more). The tag filter drives the query from contact_tags(tag_id, contact_id)
     * — walking one tag's contacts newest first and stopping after `limit + 1` — so its cost does not grow with
     * the number of contacts in the company.
     */
    async listPage(f: ContactListQuery): Promise<ContactRow[]> {
      const where: string[] = ["c.company_id = ?", "c.deleted_at IS NULL"];
      const args: (string | number)[] = [f.companyId];
      let from = "contacts c";
      let idCol = "c.id";

      const ids = f.tagIds;
      if (ids.length) {
        if (f.tagMatch === "all" || ids.length === 1) {
          // Drive from the first tag's index range; the others must also be present.
          // NB! CROSS JOIN: SQLite keeps that order only so. Without statistics (nothing runs ANALYZE) its
          // planner preferred to walk every contact of the company and look the tag up for each, then sort:
          // 3.7 s a call at 1M contacts against 0.08 ms (bench/RESULTS.md, issue 42). PostgreSQL reads it as
          // an inner join and plans it with its own statistics.
          from = "contact_tags t0 CROSS JOIN contacts c";
          idCol = "t0.contact_id";
          where.unshift("t0.tag_id = ?", "c.id = t0.contact_id");
          args.unshift(ids[0]!);
          for (const id of ids.slice(1)) {
            where.push("EXISTS (SELECT 1 FROM contact_tags tx WHERE tx.contact_id = c.id AND tx.tag_id = ?)");
            args.push(id);
          }
        } else {
          where.push(sql.anyTag);
          args.push(JSON.stringify(ids));
        }
      }
      if (f.channel) {
        where.push("EXISTS (SELECT 1 FROM contact_identities i WHERE i.contact_id = c.id AND i.channel = ?)");
        args.push(f.channel);
      }
      if (f.consent) {
        const [channel, status] = f.consent;
        if (status === "unknown") {
          where.push("NOT EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ?)");
          args.push(channel);
        } else {
          where.push("EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ? AND k.status = ?)");
          args.push(channel, status);
        }
      }
      const q = f.q?.trim().toLowerCase();
      if (q) {
        // Names: word prefixes in the name index (case- and accent-insensitive on both engines; "ann sm" finds
        // "Anna Smith" and "Smith, Anna"). Identities: a prefix of any value (e-mail, phone — with or without the
        // +, handle — with or without the @), one range per channel of the (company, channel, value) primary key.
        const values = new Set([q]);
        if (/^\d/.test(q)) values.add(`+${q}`);
        if (/^[a-z0-9_.]/.test(q)) values.add(`@${q}`);
        const parts = [...values].map(
          () => `SELECT contact_id FROM contact_identities WHERE company_id = ? AND channel IN (${CHANNEL_LIST}) AND value >= ? AND value < ?`,
        );
        const qArgs: string[] = [...values].flatMap((v) => [f.companyId, v, v + TOP]);
        const match = nameMatch(q, engine);
        where.push(`(${match ? `${sql.nameMatch} OR ` : ""}c.id IN (${parts.join(" UNION ALL ")}))`);
        if (match) args.push(match);
        args.push(...qArgs);
      }
      if (f.createdAfter !== undefined) {
        where.push("c.created_at > ?");
        args.push(f.createdAfter);
      }
      if (f.updatedAfter !== undefined) {
        where.push("c.updated_at > ?");
        args.push(f.updatedAfter);
      }
      if (f.before) {
        where.push(`${idCol} < ?`);
        args.push(f.before);
      }
      args.push(f.limit + 1);
      const raw = (await db
        .sql(`SELECT ${CONTACT_COLUMNS} FROM ${from} WHERE ${where.join(" AND ")} ORDER BY ${idCol} DESC LIMIT ?`)
        .all(...args)) as unknown as RawContact[];
      return raw.map(toContactRow);
    },

    /**
     * Bulk writes (imports): contacts inserted from here until `flushSearchIndex` in the same transaction are
     * indexed for `q` by one statement instead of one FTS5 insert each (measured: ~10 µs a row → ~2 µs). The
     * triggers on contacts (migrations/0001) skip rows at or above `deferred_from`; updates of older rows are
     * indexed as usual. On PostgreSQL both are no-ops: its name search is an expression index
     * (contacts_name_search_idx), which the table keeps by itself.
     */
    deferSearchIndex: onSqlite
      ? async (): Promise<void> => {
          await db.sql(`UPDATE contact_search_state SET deferred_from = (SELECT coalesce(max(seq), 0) + 1 FROM contacts)`).run();
        }
      : async (): Promise<void> => {},

    flushSearchIndex: onSqlite
      ? async (): Promise<void> => {
          await db
            .sql(
              `INSERT INTO contact_search (rowid, first_name, last_name)
       SELECT seq, first_name, last_name FROM contacts WHERE seq >= (SELECT deferred_from FROM contact_search_state)`,
            )
            .run();
          await db.sql(`UPDATE contact_search_state SET deferred_from = NULL`).run();
        }
      : async (): Promise<void> => {},

    /**
     * Whether `withImportWrites` holds (PostgreSQL; see HeldImportWrites): SQLite writes each row at once (a
     * statement there is a function call, not a round trip).
     */
    holdsImportWrites: false as boolean,

    /**
     * Runs fn (an import transaction's rows, inside its unit) with their writes held (PostgreSQL, when `hold` is
     * given: see HeldImportWrites), reading first, in one statement, which contacts own `hold.identities`; sends
     * what fn held when it returns, inside the unit, before its commit. SQLite (or no `hold`): fn as it is.
     */
    async withImportWrites<T>(_hold: { companyId: string; identities: { channel: string; value: string }[] } | null, fn: () => Promise<T>): Promise<T> {
      return await fn();
    },
  };
  return store;
}

type BaseStore = ReturnType<typeof contactsStoreOn>;

export function createContactsStore(dbIn: Db): BaseStore {
  const db = storeDb(dbIn);
  const store = contactsStoreOn(db);
  return db.engine === "sqlite" ? store : holdingImportWrites(dbIn, store);
}

/**
 * The PostgreSQL store with held import writes (HeldImportWrites): every function sends what is held before it
 * runs, but those that answer from or add to what is held.
 */
function holdingImportWrites(dbIn: Db, base: BaseStore): BaseStore {
  const db = storeDb(dbIn);
  const current = () => heldImportWritesOf(dbIn);
  const send = (h: HeldImportWrites) => sendHeldImportWrites(db, h);
  const store = {} as Record<string, unknown>;
  for (const [name, f] of Object.entries(base) as [string, (...a: unknown[]) => unknown][])
    store[name] = async (...a: unknown[]) => {
      const h = current();
      if (h) await send(h);
      return await f(...a);
    };
  const sending = { ...store } as unknown as BaseStore; // (the overrides below fall back to these)
  const held = (companyId: string) => {
    const h = current();
    return h?.companyId === companyId ? h : null;
  };
  const overrides: Partial<BaseStore> = {
    async identityByValue(companyId, channel, value) {
      const h = held(companyId);
      const known = h?.owners.get(identityKey(channel, value));
      if (known === undefined) return sending.identityByValue(companyId, channel, value);
      return known ? toIdentityRow(known) : undefined;
    },
    async insertContact(c) {
      const h = held(c.companyId);
      if (!h) return sending.insertContact(c);
      h.contacts.push([c.id, c.companyId, c.firstName, c.lastName, c.city, c.country, JSON.stringify(c.customFields), c.at]);
      h.created.add(c.id);
    },
    async insertIdentity(i) {
      const h = held(i.companyId);
      if (!h) return sending.insertIdentity(i);
      h.identities.push([i.companyId, i.contactId, i.channel, i.value, i.status, i.at]);
      h.owners.set(identityKey(i.channel, i.value), {
        company_id: i.companyId,
        contact_id: i.contactId,
        channel: i.channel,
        value: i.value,
        status: i.status as RawIdentity["status"],
        created_at: i.at,
      });
      return { companyId: i.companyId, contactId: i.contactId, channel: i.channel, value: i.value, status: i.status as "verified", createdAt: new Date(i.at) };
    },
    async consentOf(contactId, channel) {
      const h = current();
      if (!h?.created.has(contactId)) return sending.consentOf(contactId, channel);
      const c = h.consents.get(`${contactId}\0${channel}`);
      return c && { contactId: c[0], channel: c[1], status: c[3], source: c[4], updatedAt: c[5] };
    },
    async writeConsent(c) {
      const h = held(c.companyId);
      if (!h?.created.has(c.contactId)) return sending.writeConsent(c);
      h.consents.set(`${c.contactId}\0${c.channel}`, [c.contactId, c.channel, c.companyId, c.status, c.source, c.at]);
      h.history.push([newId(), c.companyId, c.contactId, c.channel, c.status, c.source, c.at]);
    },
    holdsImportWrites: true,
    async withImportWrites(hold, fn) {
      if (!hold) return await fn();
      const outer = current();
      if (outer) await send(outer);
      const keys = hold.identities.map((i) => [i.channel, i.value]);
      const owners = new Map<string, RawIdentity | null>(keys.map(([channel, value]) => [identityKey(channel!, value!), null]));
      if (keys.length)
        for (const r of (await db.sql(HELD_SQL.owners).all(JSON.stringify(keys), hold.companyId)) as unknown as RawIdentity[])
          owners.set(identityKey(r.channel, r.value), { ...r, created_at: Number(r.created_at) });
      const h: HeldImportWrites = {
        db: dbIn,
        companyId: hold.companyId,
        owners,
        created: new Set(),
        contacts: [],
        identities: [],
        consents: new Map(),
        history: [],
        links: [],
        linked: new Map(),
        ended: false,
      };
      // fn's chain holds; what it held is sent (in its unit) when it ends well, and forgotten when it throws.
      try {
        const value = await holding.run(h, fn);
        await send(h);
        return value;
      } finally {
        h.ended = true;
      }
    },
  };
  return Object.assign(store, overrides) as BaseStore;
}

export type ContactsStore = ReturnType<typeof createContactsStore>;
/** The contacts store of a connection (built on first use). */
export const contactsStore = perConnection(createContactsStore);
