import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { createReadCache } from "../../db/read-cache";
import { companiesStore, type CompaniesStore, type Company } from "./companies.repository";

export type { Company };
const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;

// NB! Synchronous: the CLI's `companies create` and `init` create a company, its credit and its seeded
// templates in one synchronous transaction, and tests of every module create companies without awaiting.
export function createCompany({ db, now, slug, name }: { db: Db; now: () => Date; slug: string; name: string }): { company: Company } {
  if (!SLUG.test(slug))
    throw new AppError("VALIDATION_FAILED", `slug "${slug}" must be lowercase letters, digits and dashes (max 63)`, [
      { pointer: "/slug", message: "invalid slug" },
    ]);
  if (!name.trim()) throw new AppError("VALIDATION_FAILED", "name must not be empty", [{ pointer: "/name", message: "empty" }]);
  const store = companiesStore(db);
  if (store.slugTaken(slug)) throw new AppError("CONFLICT", `a company with slug "${slug}" already exists`);
  const company = { id: newId(), slug, name: name.trim(), createdAt: now() };
  store.insertCompany(company);
  return { company };
}

export async function listCompanies({ db }: { db: Db }): Promise<Company[]> {
  return await companiesStore(db).list();
}

/** By slug (every inbound event and send resolves its account's company this way): cached like getCompany. */
// NB! Synchronous: start-up seeding (seedSandboxTemplates) and social's companyIdOf resolve it without awaiting.
const bySlug = new WeakMap<Db, ReturnType<typeof createReadCache<string, Company | undefined>>>();
export function findCompanyBySlug({ db, slug }: { db: Db; slug: string }): Company | undefined {
  let cache = bySlug.get(db);
  if (!cache) bySlug.set(db, (cache = createReadCache<string, Company | undefined>(db)));
  const found = cache.get(slug, () => companiesStore(db).bySlug(slug));
  if (!found) cache.invalidate(slug); // a company created later must be found at once
  return found;
}

// NB! Synchronous: the API guard's per-request company lookup cannot await.
// NB! Hot path (GET /me, every send): the store's prepared statement, looked up once per connection.
// Companies are created by the CLI and never change afterwards, so they are cached per connection.
const byIdStatements = new WeakMap<Db, { store: CompaniesStore; cache: ReturnType<typeof createReadCache<string, Company | undefined>> }>();

export function getCompany({ db, id }: { db: Db; id: string }): Company {
  let lookup = byIdStatements.get(db);
  if (!lookup) byIdStatements.set(db, (lookup = { store: companiesStore(db), cache: createReadCache<string, Company | undefined>(db) }));
  const { store, cache } = lookup;
  const c = cache.get(id, () => store.byId(id));
  if (!c) throw new AppError("NOT_FOUND", "company not found");
  return c;
}
