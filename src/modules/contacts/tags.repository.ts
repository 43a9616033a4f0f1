/**
 * The tags store: tags and the contacts' links to them (contact_tags). Raw prepared statements on the one
 * connection (`db.sql` caches each by its text), asynchronous (issue 35's store contract), run inside the caller's unit.
 * (A contact's erasure deletes its links with the rest of its rows: contacts.repository.ts `eraseContact`.)
 */
import { storeDb, type Db, type StoreDb } from "../../db/client";
import { jsonValues, perEngine } from "../../db/dialect";
import { newId } from "../../platform/ids";
import { perConnection } from "../../db/per-connection";
import { heldImportWritesOf, sendHeldImportWrites } from "./contacts-held-writes.repository";

export interface TagWithCount {
  id: string;
  name: string;
  createdAt: number;
  contactCount: number;
}

const SQL = perEngine((e) => ({
  idsByName: `SELECT id FROM tags WHERE company_id = ? AND name IN (${jsonValues(e)})`,
  namesOf: `SELECT ct.contact_id AS "contactId", t.name AS name FROM contact_tags ct JOIN tags t ON t.id = ct.tag_id
       WHERE ct.contact_id IN (${jsonValues(e)}) ORDER BY t.name`,
}));

function tagsStoreOn(db: StoreDb) {
  const sql = SQL[db.engine];

  return {
    /**
     * Tag ids by name, creating the missing tags. `known` (name → id) saves the look-ups of a bulk write; it must
     * not outlive the transaction (a rollback takes created tags back).
     */
    async ensureTags(companyId: string, names: string[], at: number, known?: Map<string, string>): Promise<string[]> {
      const ids: string[] = [];
      for (const name of names) {
        let id =
          known?.get(name) ?? ((await db.sql(`SELECT id FROM tags WHERE company_id = ? AND name = ?`).get(companyId, name)) as { id: string } | null)?.id;
        if (!id) {
          id = newId();
          await db.sql(`INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, ?)`).run(id, companyId, name, at);
        }
        known?.set(name, id);
        ids.push(id);
      }
      return ids;
    },

    async insertTag(t: { id: string; companyId: string; name: string; createdAt: number }): Promise<void> {
      await db.sql(`INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, ?)`).run(t.id, t.companyId, t.name, t.createdAt);
    },

    async tagByName(companyId: string, name: string): Promise<{ id: string; name: string; createdAt: number } | undefined> {
      return (
        ((await db.sql(`SELECT id, name, created_at AS "createdAt" FROM tags WHERE company_id = ? AND name = ?`).get(companyId, name)) as {
          id: string;
          name: string;
          createdAt: number;
        } | null) ?? undefined
      );
    },

    /** The ids of the company's tags among `names` (unknown names have none). */
    async tagIdsByName(companyId: string, names: string[]): Promise<string[]> {
      return ((await db.sql(sql.idsByName).all(companyId, JSON.stringify(names))) as { id: string }[]).map((r) => r.id);
    },

    /** Tags by name ascending after `after` ("" for the first page), each with its number of contacts. */
    async listTags(companyId: string, after: string, limit: number): Promise<TagWithCount[]> {
      return (await db
        .sql(
          `SELECT t.id, t.name, t.created_at AS "createdAt",
         (SELECT count(*) FROM contact_tags ct WHERE ct.tag_id = t.id) AS "contactCount"
       FROM tags t WHERE t.company_id = ? AND t.name > ? ORDER BY t.name LIMIT ?`,
        )
        .all(companyId, after, limit)) as unknown as TagWithCount[];
    },

    /** Returns how many links were added. */
    async addContactTags(contactId: string, tagIds: string[], at: number): Promise<number> {
      let added = 0;
      for (const tagId of tagIds)
        added += (await db.sql(`INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`).run(contactId, tagId, at))
          .changes;
      return added;
    },

    async removeContactTag(contactId: string, tagId: string): Promise<number> {
      return (await db.sql(`DELETE FROM contact_tags WHERE contact_id = ? AND tag_id = ?`).run(contactId, tagId)).changes;
    },

    async contactTagIds(contactId: string): Promise<string[]> {
      return ((await db.sql(`SELECT tag_id AS "tagId" FROM contact_tags WHERE contact_id = ?`).all(contactId)) as { tagId: string }[]).map((r) => r.tagId);
    },

    /** The tag names of these contacts, by name. */
    async tagNamesOf(contactIds: string[]): Promise<{ contactId: string; name: string }[]> {
      if (!contactIds.length) return [];
      return (await db.sql(sql.namesOf).all(JSON.stringify(contactIds))) as { contactId: string; name: string }[];
    },
  };
}

type BaseStore = ReturnType<typeof tagsStoreOn>;

export function createTagsStore(dbIn: Db): BaseStore {
  const db = storeDb(dbIn);
  const store = tagsStoreOn(db);
  if (db.engine === "sqlite") return store;
  // PostgreSQL: an import's held writes (contacts-held-writes.repository.ts HeldImportWrites) hold the tag links of the
  // contacts it creates; every other function but those that touch only tags sends what is held first.
  // NB! A new function here that reads or writes contact_tags must be added to this list (or it reads past held links).
  const sendFirst =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      const h = heldImportWritesOf(dbIn);
      if (h) await sendHeldImportWrites(storeDb(dbIn), h);
      return await f(...a);
    };
  return {
    ...store,
    listTags: sendFirst(store.listTags),
    removeContactTag: sendFirst(store.removeContactTag),
    contactTagIds: sendFirst(store.contactTagIds),
    tagNamesOf: sendFirst(store.tagNamesOf),
    async addContactTags(contactId, tagIds, at) {
      const h = heldImportWritesOf(dbIn);
      if (!h?.created.has(contactId)) return await sendFirst(store.addContactTags)(contactId, tagIds, at);
      let linked = h.linked.get(contactId);
      if (!linked) h.linked.set(contactId, (linked = new Set()));
      let added = 0;
      for (const tagId of tagIds) {
        if (linked.has(tagId)) continue;
        linked.add(tagId);
        h.links.push([contactId, tagId, at]);
        added++;
      }
      return added;
    },
  };
}

export type TagsStore = ReturnType<typeof createTagsStore>;
/** The tags store of a connection (built on first use). */
export const tagsStore = perConnection(createTagsStore);
