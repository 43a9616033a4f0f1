/**
 * Applies the migrations embedded in the binary (migrations.gen.ts), with drizzle's own migrator so the
 * bookkeeping table is the one drizzle-kit expects. All pending migrations run in one transaction: a
 * failed migration leaves the old schema.
 */
import type { Db } from "./client";
import { embeddedMigrations } from "./migrations.gen";

export function migrate(db: Db): { applied: number } {
  const before = countApplied(db);
  // drizzle's dialect migrator is what migrate() uses internally; it accepts an in-memory list.
  const dialect = (db as unknown as { dialect: { migrate: Function } }).dialect;
  const session = (db as unknown as { session: unknown }).session;
  dialect.migrate(embeddedMigrations, session, { migrationsTable: "__drizzle_migrations" });
  return { applied: countApplied(db) - before };
}

function countApplied(db: Db): number {
  try {
    const row = db.$client.query("SELECT count(*) AS n FROM __drizzle_migrations").get() as { n: number } | null;
    return row?.n ?? 0;
  } catch {
    return 0;
  }
}
