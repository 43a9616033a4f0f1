/**
 * Upgrade by binary swap: a database made by an earlier release's migrations is backed up (integrity-checked,
 * retention) before the pending migrations run; a database written by a newer version is refused, naming
 * both versions; a fresh database is not backed up.
 */
import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "./client";
import { migrateWithBackup, SchemaTooNewError } from "./migrate";
import { embeddedMigrations } from "./migrations.gen";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A database as release 0.1.0 left it: only the first two migrations (0000_init, 0001), with a company (or the first `upTo`). */
function previousRelease(upTo = 2): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "sb-upgrade-"));
  dirs.push(dir);
  const file = join(dir, "switchboard.db");
  const db = openDatabase(file);
  const dialect = (db as unknown as { dialect: { migrate: (...args: unknown[]) => unknown } }).dialect;
  dialect.migrate(embeddedMigrations.slice(0, upTo), (db as unknown as { session: unknown }).session, { migrationsTable: "__drizzle_migrations" });
  db.$client.query("INSERT INTO companies (id, slug, name, created_at) VALUES ('c1', 'old', 'Old Co', 1)").run();
  db.$client.exec("PRAGMA user_version = 1000");
  db.close();
  return { dir, file };
}
const tables = (db: Database | Db) =>
  ((("$client" in db ? db.$client : db) as Database).query("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
    (r) => r.name,
  );

test("pending migrations on a database with data: a checked backup first, then the upgrade", () => {
  const { dir, file } = previousRelease();
  const db = openDatabase(file);
  const r = migrateWithBackup(db, { version: "0.3.0", backupDir: join(dir, "backups"), keep: 5, now: new Date("2026-11-23T10:00:00.000Z") });
  expect(r.applied).toBe(embeddedMigrations.length - 2);
  expect(r.backup).toBe(join(dir, "backups", "pre-0.3.0-2026-11-23T10-00-00-000Z.db"));
  expect(tables(db)).toContain("campaigns");
  expect((db.$client.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(3000);
  db.close();
  const backup = new Database(r.backup!, { readonly: true });
  expect((backup.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
  expect(tables(backup)).not.toContain("campaigns"); // the schema before the upgrade
  expect(backup.query("SELECT slug FROM companies").all()).toEqual([{ slug: "old" }]);
  backup.close();
});

test("0013 rebuilds contact_consents WITHOUT ROWID and keeps every consent and its key", () => {
  const { dir, file } = previousRelease(13);
  const before = new Database(file);
  before.exec(`INSERT INTO contacts (id, company_id, custom_fields, blocked, created_at, updated_at) VALUES ('k1', 'c1', '{}', 0, 1, 1);
    INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES ('k1', 'whatsapp', 'c1', 'opted_in', 'api', 5), ('k1', 'email', 'c1', 'opted_out', 'import', 6)`);
  before.close();
  const db = openDatabase(file);
  expect(migrateWithBackup(db, { version: "0.3.0", backupDir: join(dir, "backups"), keep: 5 }).applied).toBe(embeddedMigrations.length - 13);
  const c = db.$client;
  expect((c.query("SELECT sql FROM sqlite_master WHERE name = 'contact_consents'").get() as { sql: string }).sql).toEndWith("WITHOUT ROWID");
  expect(c.query("SELECT contact_id, channel, company_id, status, source, updated_at FROM contact_consents ORDER BY channel").all()).toEqual([
    { contact_id: "k1", channel: "email", company_id: "c1", status: "opted_out", source: "import", updated_at: 6 },
    { contact_id: "k1", channel: "whatsapp", company_id: "c1", status: "opted_in", source: "api", updated_at: 5 },
  ]);
  expect(() =>
    c
      .query("INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES ('k1', 'email', 'c1', 'opted_in', 'api', 7)")
      .run(),
  ).toThrow(/UNIQUE|PRIMARY/);
  expect(c.query("PRAGMA foreign_key_check").all()).toEqual([]);
  expect(c.query("SELECT name FROM sqlite_master WHERE tbl_name = 'contact_consents' AND type = 'index' AND sql IS NOT NULL").all()).toEqual([
    { name: "contact_consents_filter_idx" },
  ]);
  db.close();
});

test("no pending migration, or a fresh database: no backup", () => {
  const { dir, file } = previousRelease();
  const db = openDatabase(file);
  migrateWithBackup(db, { version: "0.3.0", backupDir: join(dir, "backups"), keep: 5 });
  expect(migrateWithBackup(db, { version: "0.3.0", backupDir: join(dir, "backups"), keep: 5 }).backup).toBeNull();
  db.close();
  const fresh = openDatabase(join(dir, "fresh.db"));
  expect(migrateWithBackup(fresh, { version: "0.3.0", backupDir: join(dir, "fresh-backups"), keep: 5 })).toMatchObject({ backup: null });
  fresh.close();
});

test("retention keeps the newest `keep` backups", async () => {
  const backupDir = mkdtempSync(join(tmpdir(), "sb-backups-"));
  dirs.push(backupDir);
  for (let i = 0; i < 4; i++) {
    const { file } = previousRelease();
    const db = openDatabase(file);
    migrateWithBackup(db, { version: "0.3.0", backupDir, keep: 2, now: new Date(Date.UTC(2026, 10, 23, 10, i)) });
    db.close();
    await Bun.sleep(5); // distinct modification times
  }
  expect(readdirSync(backupDir).sort()).toEqual(["pre-0.3.0-2026-11-23T10-02-00-000Z.db", "pre-0.3.0-2026-11-23T10-03-00-000Z.db"]);
});

test("a database written by a newer version is refused, naming both versions, and left untouched", () => {
  const { dir, file } = previousRelease();
  const db = openDatabase(file);
  migrateWithBackup(db, { version: "0.3.0", backupDir: null, keep: 5 });
  const newest = embeddedMigrations[embeddedMigrations.length - 1]!.folderMillis;
  db.$client.query("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('future', ?)").run(newest + 1000);
  db.$client.exec("PRAGMA user_version = 1002003");
  expect(() => migrateWithBackup(db, { version: "0.3.0", backupDir: join(dir, "backups"), keep: 5 })).toThrow(SchemaTooNewError);
  expect(() => migrateWithBackup(db, { version: "0.3.0", backupDir: join(dir, "backups"), keep: 5 })).toThrow(/Switchboard 1\.2\.3.*\(0\.3\.0\)/);
  expect((db.$client.query("PRAGMA user_version").get() as { user_version: number }).user_version).toBe(1002003);
  db.close();
});
