/**
 * Applies the migrations embedded in the binary (migrations.gen.ts), with drizzle's own migrator so the
 * bookkeeping table is the one drizzle-kit expects. All pending migrations run in one transaction: a
 * failed migration leaves the old schema.
 *
 * NB! Foreign keys are off while migrations run (SQLite's table-rebuild procedure: a rebuilt parent table is
 * dropped and renamed) and checked afterwards; `PRAGMA foreign_keys` is a no-op inside a transaction, so the
 * migration files' own PRAGMA lines cannot do it.
 */
import type { Db } from "./client";
import { embeddedMigrations } from "./migrations.gen";

export function migrate(db: Db): { applied: number } {
  const before = countApplied(db);
  // drizzle's dialect migrator is what migrate() uses internally; it accepts an in-memory list.
  const dialect = (db as unknown as { dialect: { migrate: Function } }).dialect;
  const session = (db as unknown as { session: unknown }).session;
  const sqlite = db.$client;
  sqlite.exec("PRAGMA foreign_keys = OFF");
  try {
    dialect.migrate(embeddedMigrations, session, { migrationsTable: "__drizzle_migrations" });
    const broken = sqlite.query("PRAGMA foreign_key_check").all() as { table: string; parent: string }[];
    if (broken.length) throw new Error(`migration left ${broken.length} broken foreign key(s), e.g. ${broken[0]!.table} → ${broken[0]!.parent}`);
  } finally {
    sqlite.exec("PRAGMA foreign_keys = ON");
  }
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
