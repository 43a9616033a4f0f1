/**
 * The companies store: every read and write of the companies table. Callers hold the transaction and the
 * read caches (companies.service.ts); nothing here opens a transaction.
 */
import { asc, eq, sql } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { mapRow } from "../../db/rows";
import { companies } from "./companies.table";
import { perConnection } from "../../db/per-connection";

export type Company = typeof companies.$inferSelect;

export function createCompaniesStore(dbIn: Db) {
  const db = storeDb(dbIn);
  // NB! Hot path (GET /me, every send): a prepared statement per connection; drizzle's plain .get()
  // rebuilds the SQL on every call (~40 µs).
  const byIdStmt = db
    .select()
    .from(companies)
    .where(eq(companies.id, sql.placeholder("id")))
    .prepare();
  return {
    async byId(id: string): Promise<Company | undefined> {
      return await byIdStmt.get({ id });
    },
    async bySlug(slug: string): Promise<Company | undefined> {
      return mapRow(companies, await db.sql("SELECT * FROM companies WHERE slug = ?").get(slug));
    },
    async slugTaken(slug: string): Promise<boolean> {
      return !!(await db.select({ id: companies.id }).from(companies).where(eq(companies.slug, slug)).get());
    },
    async insertCompany(company: Company): Promise<void> {
      await db.insert(companies).values(company).run();
    },
    /** Every company, by slug. */
    async list(): Promise<Company[]> {
      return await db.select().from(companies).orderBy(asc(companies.slug)).all();
    },
  };
}

export type CompaniesStore = ReturnType<typeof createCompaniesStore>;

/** The store of a connection, built once. */
export const companiesStore = perConnection(createCompaniesStore);
