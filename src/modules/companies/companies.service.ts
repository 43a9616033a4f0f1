import { asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { companies } from "./companies.table";

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

export function findCompanyBySlug({ db, slug }: { db: Db; slug: string }): Company | undefined {
  return db.select().from(companies).where(eq(companies.slug, slug)).get();
}

export function getCompany({ db, id }: { db: Db; id: string }): Company {
  const c = db.select().from(companies).where(eq(companies.id, id)).get();
  if (!c) throw new AppError("NOT_FOUND", "company not found");
  return c;
}
