/** Source-tracking queries. Only this file touches the sources tables. */
import { and, desc, eq, lt } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { jsonValues } from "../../db/dialect";
import { contactSourceHistory, contactSources, sources } from "./sources.table";

export type SourceRow = typeof sources.$inferSelect;
export type ContactSourceRow = typeof contactSources.$inferSelect;
export type SourceHistoryRow = typeof contactSourceHistory.$inferSelect;

export function createSourcesRepository(dbIn: Db) {
  const db = storeDb(dbIn);
  const knownCodes = `SELECT code FROM sources WHERE company_id = ? AND code IN (${jsonValues(db.engine)})`;
  return {
    async insertSource(row: SourceRow): Promise<void> {
      await db.insert(sources).values(row).run();
    },
    async updateSource(id: string, patch: Partial<SourceRow>): Promise<void> {
      await db.update(sources).set(patch).where(eq(sources.id, id)).run();
    },
    async get(companyId: string, id: string): Promise<SourceRow | undefined> {
      return await db
        .select()
        .from(sources)
        .where(and(eq(sources.companyId, companyId), eq(sources.id, id)))
        .get();
    },
    async byCode(companyId: string, code: string): Promise<SourceRow | undefined> {
      return await db
        .select()
        .from(sources)
        .where(and(eq(sources.companyId, companyId), eq(sources.code, code)))
        .get();
    },
    /** The first of `codes` that is a source of the company (in the order given). */
    async firstKnownCode(companyId: string, codes: string[]): Promise<SourceRow | undefined> {
      if (!codes.length) return undefined;
      const rows = (await db.sql(knownCodes).all(companyId, JSON.stringify(codes))) as { code: string }[];
      const known = new Set(rows.map((r) => r.code));
      const code = codes.find((c) => known.has(c));
      return code ? await this.byCode(companyId, code) : undefined;
    },
    async byExternalId(companyId: string, externalId: string): Promise<SourceRow | undefined> {
      return await db
        .select()
        .from(sources)
        .where(and(eq(sources.companyId, companyId), eq(sources.externalId, externalId)))
        .get();
    },
    /** Newest first, keyset on id. */
    async list(companyId: string, limit: number, before?: string): Promise<SourceRow[]> {
      return await db
        .select()
        .from(sources)
        .where(and(eq(sources.companyId, companyId), before ? lt(sources.id, before) : undefined))
        .orderBy(desc(sources.id))
        .limit(limit)
        .all();
    },

    // ---- contact attribution
    async ofContact(contactId: string): Promise<ContactSourceRow | undefined> {
      return await db.select().from(contactSources).where(eq(contactSources.contactId, contactId)).get();
    },
    /** Writes the contact's first attribution; false when the contact already has a row (first touch wins). */
    async insertFirst(row: ContactSourceRow): Promise<boolean> {
      return (
        (
          await db
            .sql(
              `INSERT INTO contact_sources (contact_id, company_id, source_id, via, referral, attributed_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (contact_id) DO NOTHING`,
            )
            .run(
              row.contactId,
              row.companyId,
              row.sourceId,
              row.via,
              row.referral ? JSON.stringify(row.referral) : null,
              row.attributedAt.getTime(),
              row.updatedAt.getTime(),
            )
        ).changes === 1
      );
    },
    async upsertManual(row: ContactSourceRow): Promise<void> {
      await db
        .insert(contactSources)
        .values(row)
        .onConflictDoUpdate({
          target: contactSources.contactId,
          set: { sourceId: row.sourceId, via: row.via, referral: row.referral, attributedAt: row.attributedAt, updatedAt: row.updatedAt },
        })
        .run();
    },
    async addHistory(row: SourceHistoryRow): Promise<void> {
      await db.insert(contactSourceHistory).values(row).run();
    },
    async history(contactId: string): Promise<SourceHistoryRow[]> {
      return await db.select().from(contactSourceHistory).where(eq(contactSourceHistory.contactId, contactId)).orderBy(contactSourceHistory.id).all();
    },
    /** A deleted contact's attribution and its history go with it (the referral may identify the person). */
    async forgetContact(contactId: string): Promise<void> {
      await db.sql(`DELETE FROM contact_sources WHERE contact_id = ?`).run(contactId);
      await db.sql(`DELETE FROM contact_source_history WHERE contact_id = ?`).run(contactId);
    },
    /** Contacts attributed to a source in [from, to). */
    async contactsOf(sourceId: string, from: Date | null, to: Date | null): Promise<string[]> {
      const rows = (await db
        .sql(`SELECT contact_id FROM contact_sources WHERE source_id = ?1 AND attributed_at >= ?2 AND attributed_at < ?3`)
        .all(sourceId, from?.getTime() ?? 0, to?.getTime() ?? Number.MAX_SAFE_INTEGER)) as { contact_id: string }[];
      return rows.map((r) => r.contact_id);
    },
  };
}

export type SourcesRepository = ReturnType<typeof createSourcesRepository>;
