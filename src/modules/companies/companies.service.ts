import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { createReadCache } from "../../db/read-cache";
import { companiesStore, type CompaniesStore, type Company } from "./companies.repository";

export type { Company };
const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

export async function createCompany({ db, now, slug, name }: { db: Db; now: () => Date; slug: string; name: string }): Promise<{ company: Company }> {
  if (!SLUG.test(slug))
    throw new AppError("VALIDATION_FAILED", `slug "${slug}" must be lowercase letters, digits and dashes (max 63)`, [
      { pointer: "/slug", message: "invalid slug" },
    ]);
  if (!name.trim()) throw new AppError("VALIDATION_FAILED", "name must not be empty", [{ pointer: "/name", message: "empty" }]);
  const store = companiesStore(db);
  if (await store.slugTaken(slug)) throw new AppError("CONFLICT", `a company with slug "${slug}" already exists`);
  const company = { id: newId(), slug, name: name.trim(), createdAt: now() };
  await store.insertCompany(company);
  return { company };
}

export async function listCompanies({ db }: { db: Db }): Promise<Company[]> {
  return await companiesStore(db).list();
}

/** By slug (every inbound event and send resolves its account's company this way): cached like getCompany. */
const bySlug = new WeakMap<Db, ReturnType<typeof createReadCache<string, Company | undefined>>>();
function slugCache(db: Db) {
  let cache = bySlug.get(db);
  if (!cache) bySlug.set(db, (cache = createReadCache<string, Company | undefined>(db)));
  return cache;
}
export async function findCompanyBySlug({ db, slug }: { db: Db; slug: string }): Promise<Company | undefined> {
  const cache = slugCache(db);
  const found = await cache.lookup(slug, () => companiesStore(db).bySlug(slug));
  if (!found) cache.invalidate(slug); // a company created later must be found at once
  return found;
}

// NB! Hot path (GET /me, every send): the store's prepared statement, looked up once per connection.
// Companies are created by the CLI and never change afterwards, so they are cached per connection.
const byIdStatements = new WeakMap<Db, { store: CompaniesStore; cache: ReturnType<typeof createReadCache<string, Company | undefined>> }>();
function byIdLookup(db: Db) {
  let lookup = byIdStatements.get(db);
  if (!lookup) byIdStatements.set(db, (lookup = { store: companiesStore(db), cache: createReadCache<string, Company | undefined>(db) }));
  return lookup;
}

export async function getCompany({ db, id }: { db: Db; id: string }): Promise<Company> {
  const { store, cache } = byIdLookup(db);
  const c = await cache.lookup(id, () => store.byId(id));
  if (!c) throw new AppError("NOT_FOUND", "company not found");
  return c;
}

/**
 * The company of a principal the API guard resolved: from the cache without a promise when it is there (the
 * guard's hot path), else the store's read to await.
 */
export function companyOfKey({ db, id }: { db: Db; id: string }): Company | Promise<Company> {
  const { store, cache } = byIdLookup(db);
  const c = cache.lookup(id, () => store.byId(id));
  if (c instanceof Promise)
    return c.then((found) => {
      if (!found) throw new AppError("NOT_FOUND", "company not found");
      return found;
    });
  if (!c) throw new AppError("NOT_FOUND", "company not found");
  return c;
}
