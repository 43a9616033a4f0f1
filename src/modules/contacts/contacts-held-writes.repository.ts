/**
 * An import's held writes (PostgreSQL): the state an import transaction's chain holds, its multi-row statements,
 * and their sending. The contacts store (contacts.repository.ts holdingImportWrites) holds into it and answers
 * from it; the tags store (tags.repository.ts) holds its links there.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Db, StoreDb } from "../../db/client";
import type { RawIdentity } from "./contacts-rows.repository";

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

export const holding = new AsyncLocalStorage<HeldImportWrites>();

/** The writes the caller's chain holds on this connection (PostgreSQL, inside `withImportWrites`), else null. */
export function heldImportWritesOf(db: Db): HeldImportWrites | null {
  const h = holding.getStore();
  return h !== undefined && h.db === db && !h.ended ? h : null;
}

/** The multi-row statements of held writes (PostgreSQL): one JSON array parameter of row arrays each, in order. */
const rowsOf = "jsonb_array_elements(?::jsonb) WITH ORDINALITY AS e(v, n)";
export const HELD_SQL = {
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

export const identityKey = (channel: string, value: string) => `${channel}\0${value}`;

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
