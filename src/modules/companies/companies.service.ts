import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { companies } from "./companies.table";
import { createReadCache } from "../../db/read-cache";
import { mapRow } from "../../db/rows";

export type Company = typeof companies.$inferSelect;
const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function createCompany({ db, now, slug, name }: { db: Db; now: () => Date; slug: string; name: string }): { company: Company } {
  if (!SLUG.test(slug)) throw new AppError("VALIDATION_FAILED", `slug "${slug}" must be lowercase letters, digits and dashes (max 63)`, [{ pointer: "/slug", message: "invalid slug" }]);
  if (!name.trim()) throw new AppError("VALIDATION_FAILED", "name must not be empty", [{ pointer: "/name", message: "empty" }]);
  if (db.select({ id: companies.id }).from(companies).where(eq(companies.slug, slug)).get())
    throw new AppError("CONFLICT", `a company with slug "${slug}" already exists`);
  const company = { id: newId(), slug, name: name.trim(), createdAt: now() };
  db.insert(companies).values(company).run();
  return { company };
}

export function listCompanies({ db }: { db: Db }): Company[] {
  return db.select().from(companies).orderBy(asc(companies.slug)).all();
}

/** By slug (every inbound event and send resolves its account's company this way): cached like getCompany. */
const bySlug = new WeakMap<Db, ReturnType<typeof createReadCache<string, Company | undefined>>>();
export function findCompanyBySlug({ db, slug }: { db: Db; slug: string }): Company | undefined {
  let cache = bySlug.get(db);
  if (!cache) bySlug.set(db, (cache = createReadCache<string, Company | undefined>(db)));
  const found = cache.get(slug, () => mapRow(companies, db.$client.query("SELECT * FROM companies WHERE slug = ?").get(slug) as Record<string, unknown> | null));
  if (!found) cache.invalidate(slug); // a company created later must be found at once
  return found;
}

// NB! Hot path (GET /me, every send): a prepared statement per connection; drizzle's plain .get()
// rebuilds the SQL on every call (~40 µs).
// Companies are created by the CLI and never change afterwards, so they are cached per connection.
const byIdStatements = new WeakMap<Db, { stmt: ReturnType<typeof prepareById>; cache: ReturnType<typeof createReadCache<string, Company | undefined>> }>();
const prepareById = (db: Db) => db.select().from(companies).where(eq(companies.id, sql.placeholder("id"))).prepare();

export function getCompany({ db, id }: { db: Db; id: string }): Company {
  let lookup = byIdStatements.get(db);
  if (!lookup) byIdStatements.set(db, (lookup = { stmt: prepareById(db), cache: createReadCache<string, Company | undefined>(db) }));
  const { stmt, cache } = lookup;
  const c = cache.get(id, () => stmt.get({ id }));
  if (!c) throw new AppError("NOT_FOUND", "company not found");
  return c;
}
