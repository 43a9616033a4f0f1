/**
 * The contacts store: contacts, their identities, consent (and its history) and the name search index.
 * Raw prepared statements on the one connection (`query()` caches each statement by its text): the upsert and
 * import paths run thousands of these per second, so this file skips the query builder; the drizzle tables in
 * *.table.ts remain the schema of record. Every function is asynchronous (issue 35's store contract: one
 * awaited statement each) and meant to run inside the caller's unit; none starts or ends a transaction.
 * Beside it: the rows and their mapping (contacts-rows.repository.ts), GET /contacts' page
 * (contacts-list.repository.ts) and an import's held writes on PostgreSQL (contacts-held-writes.repository.ts).
 */
import { storeDb, type Db, type StoreDb } from "../../db/client";
import { jsonValues, perEngine } from "../../db/dialect";
import { newId } from "../../platform/ids";
import type { ConsentSource } from "./contacts.model";
import { perConnection } from "../../db/per-connection";
import { HELD_SQL, heldImportWritesOf, holding, identityKey, sendHeldImportWrites, type HeldImportWrites } from "./contacts-held-writes.repository";
import { listContactsPage, type ContactListQuery } from "./contacts-list.repository";
import {
  CONTACT_COLUMNS,
  identityRank,
  toContactRow,
  toIdentityRow,
  type ConsentRow,
  type ContactRow,
  type IdentityRow,
  type RawContact,
  type RawIdentity,
} from "./contacts-rows.repository";

/**
 * The statements whose text differs by engine (the list's: contacts-list.repository.ts).
 */
const SQL = perEngine((e) => ({
  // NB! The same text as contactById on SQLite (one prepared statement); the lock only on PostgreSQL (holdContact).
  holdContact: `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.id = ? AND c.company_id = ? AND c.deleted_at IS NULL${e === "sqlite" ? "" : " FOR KEY SHARE"}`,
  // PostgreSQL's (identityWithHeldContact).
  identityHeld: `SELECT i.status AS i_status, i.created_at AS i_created_at, ${CONTACT_COLUMNS} FROM contact_identities i
       JOIN contacts c ON c.id = i.contact_id AND c.company_id = i.company_id AND c.deleted_at IS NULL
       WHERE i.company_id = ? AND i.channel = ? AND i.value = ?${e === "sqlite" ? "" : " FOR KEY SHARE OF c"}`,
  lockForMerge: `SELECT ${CONTACT_COLUMNS} FROM contacts c WHERE c.id IN (?1, ?2) AND c.company_id = ?3 AND c.deleted_at IS NULL ORDER BY c.id${e === "sqlite" ? "" : " FOR UPDATE"}`,
  identitiesOf: `SELECT * FROM contact_identities WHERE contact_id IN (${jsonValues(e)}) ORDER BY contact_id, channel, created_at, value`,
  consentsOf: `SELECT contact_id AS "contactId", channel, status, source, updated_at AS "updatedAt" FROM contact_consents
       WHERE contact_id IN (${jsonValues(e)})`,
}));

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
     * identityByValue, then the holdContact of its contact: on PostgreSQL in one statement (one round trip for
     * two), on SQLite as the two (its join cost 15 µs where the two point lookups cost 8). Undefined when that one
     * statement finds no pair (no such identity, or its contact gone: merged or deleted, also meanwhile — a merge
     * holding the row is waited for, as holdContact waits): then look them up one by one.
     */
    async identityWithHeldContact(
      companyId: string,
      channel: string,
      value: string,
    ): Promise<{ identity: IdentityRow | undefined; contact: ContactRow | undefined } | undefined> {
      if (onSqlite) {
        const identity = await store.identityByValue(companyId, channel, value);
        return { identity, contact: identity && (await store.holdContact(companyId, identity.contactId)) };
      }
      const r = (await db.sql(sql.identityHeld).get(companyId, channel, value)) as
        | (RawContact & { i_status: RawIdentity["status"]; i_created_at: number })
        | null;
      if (!r) return undefined;
      const identity = toIdentityRow({ company_id: companyId, contact_id: r.id, channel, value, status: r.i_status, created_at: r.i_created_at });
      return { identity, contact: toContactRow(r) };
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

    async insertContact(c: Omit<ContactRow, "blocked" | "createdAt" | "updatedAt"> & { at: number }): Promise<void> {
      await db
        .sql(
          `INSERT INTO contacts (id, company_id, first_name, last_name, city, country, custom_fields, blocked, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
        )
        .run(c.id, c.companyId, c.firstName, c.lastName, c.city, c.country, JSON.stringify(c.customFields), c.at, c.at);
    },

    async updateContactFields(
      id: string,
      f: Pick<ContactRow, "firstName" | "lastName" | "city" | "country" | "customFields" | "blocked"> & { at: number },
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

    /** GET /contacts' page (contacts-list.repository.ts). */
    listPage: (f: ContactListQuery): Promise<ContactRow[]> => listContactsPage(db, f),

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
    async identityWithHeldContact(companyId, channel, value) {
      // Identities held for an import answer identityByValue: look them up one by one then.
      return held(companyId) ? undefined : sending.identityWithHeldContact(companyId, channel, value);
    },
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
