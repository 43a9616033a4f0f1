/**
 * Applies the migrations embedded in the binary (migrations.gen.ts), with drizzle's own migrator so the
 * bookkeeping table is the one drizzle-kit expects. All pending migrations run in one transaction: a
 * failed migration leaves the old schema.
 *
 * NB! Foreign keys are off while migrations run (SQLite's table-rebuild procedure: a rebuilt parent table is
 * dropped and renamed) and checked afterwards; `PRAGMA foreign_keys` is a no-op inside a transaction, so the
 * migration files' own PRAGMA lines cannot do it.
 */
import { Database } from "bun:sqlite";
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Db } from "./client";
import { embeddedMigrations } from "./migrations.gen";

/** A database this binary cannot run on (written by a newer version). */
export class SchemaTooNewError extends Error {}

/** "0.2.0" → 2000; `PRAGMA user_version` keeps the version that last migrated the file. */
export function versionNumber(version: string): number {
  const [major = 0, minor = 0, patch = 0] = (/^(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number);
  return major * 1_000_000 + minor * 1_000 + patch;
}
const versionText = (n: number) => `${Math.floor(n / 1_000_000)}.${Math.floor(n / 1_000) % 1_000}.${n % 1_000}`;

/**
 * Upgrade by binary swap (start-up of every command): refuses a database written by a newer version, and
 * before pending migrations run on a database that has data, writes `<backupDir>/pre-<version>-<time>.db`
 * (VACUUM INTO, integrity-checked; the newest `keep` are kept). Then migrates and stamps the version.
 */
export function migrateWithBackup(
  db: Db,
  { version, backupDir, keep, now = new Date() }: { version: string; backupDir: string | null; keep: number; now?: Date },
): { applied: number; backup: string | null } {
  const sqlite = db.$client;
  const schema = schemaState(sqlite);
  const stamped = (sqlite.query("PRAGMA user_version").get() as { user_version: number }).user_version;
  if (schema.newer)
    throw new SchemaTooNewError(
      `the database was written by Switchboard ${stamped ? versionText(stamped) : "(a newer version)"}, whose schema is newer than this binary's (${version}): run that version or newer, or restore a backup made for ${version} (switchboard restore --from FILE)`,
    );
  let backup: string | null = null;
  if (schema.pending && schema.applied && backupDir) backup = backupBeforeMigrating(sqlite, { version, backupDir, keep, now });
  const result = migrate(db);
  if (versionNumber(version) > stamped) sqlite.exec(`PRAGMA user_version = ${versionNumber(version)}`);
  return { applied: result.applied, backup };
}

function backupBeforeMigrating(sqlite: Database, { version, backupDir, keep, now }: { version: string; backupDir: string; keep: number; now: Date }): string {
  mkdirSync(backupDir, { recursive: true });
  const name = `pre-${version}-${now.toISOString().replace(/[:.]/g, "-")}.db`;
  const target = join(backupDir, name);
  const check = writeCheckedCopy(sqlite, target);
  if (check !== "ok") throw new Error(`the backup before migrating failed its integrity check (${check}); nothing was migrated`);
  const old = readdirSync(backupDir)
    .filter((f) => /^pre-.*\.db$/.test(f))
    .map((f) => ({ f, at: statSync(join(backupDir, f)).mtimeMs }))
    .sort((a, b) => a.at - b.at)
    .map((x) => x.f)
    .slice(0, -Math.max(keep, 1));
  for (const f of old) rmSync(join(backupDir, f), { force: true });
  return target;
}

/**
 * A consistent copy of the database at `target`: VACUUM INTO a temp file beside it (safe while the server
 * runs: WAL readers don't block the writer), integrity_check it, rename it into place. Returns the check's
 * answer; on anything but "ok" the temp file is removed and `target` left as it was.
 */
export function writeCheckedCopy(sqlite: Database, target: string): string {
  const tmp = `${target}.tmp-${process.pid}`;
  rmSync(tmp, { force: true });
  sqlite.query("VACUUM INTO ?").run(tmp);
  const copy = new Database(tmp, { readonly: true });
  const check = (copy.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check;
  copy.close();
  if (check !== "ok") rmSync(tmp, { force: true });
  else renameSync(tmp, target);
  return check;
}

/** The database's schema against this binary's migrations: how many applied, how many pending, newer or not. */
export function schemaState(sqlite: Database): { applied: number; pending: number; newer: boolean } {
  let applied = 0;
  let newest = 0;
  try {
    const row = sqlite.query("SELECT count(*) AS n, max(created_at) AS newest FROM __drizzle_migrations").get() as { n: number; newest: number | null };
    applied = row.n;
    newest = row.newest ?? 0;
  } catch {} // no migration table: a fresh (or foreign) database
  const known = embeddedMigrations.length ? embeddedMigrations[embeddedMigrations.length - 1]!.folderMillis : 0;
  return { applied, pending: embeddedMigrations.filter((m) => m.folderMillis > newest).length, newer: newest > known };
}

export function migrate(db: Db): { applied: number } {
  const before = countApplied(db);
  // drizzle's dialect migrator is what migrate() uses internally; it accepts an in-memory list.
  const dialect = (db as unknown as { dialect: { migrate: (...args: unknown[]) => unknown } }).dialect;
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
