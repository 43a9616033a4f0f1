/**
 * The migration that creates media_usage fills it from the media rows already there: each company's counter
 * starts at the sum of its files' sizes (the quota would otherwise start from 0 and let an upgraded appliance
 * go over it). Run on the engine under test (SWITCHBOARD_TEST_ENGINE): SQLite's migrations/ or PostgreSQL's
 * migrations-pg/.
 */
import { afterAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../db/client";
import { migrate } from "../../db/migrate";
import { embeddedMigrations } from "../../db/migrations.gen";
import { migratePostgresAsync } from "../../db/postgres/migrate";
import { embeddedPgMigrations } from "../../db/postgres/migrations.gen";
import { freshPostgresDatabase } from "../../../test/helpers/postgres";
import { TEST_ENGINE } from "../../../test/helpers/test-app";

/** The first migration that creates media_usage, found by its text (its number changes as migrations are merged). */
const creating = (migrations: { sql: string[] }[]) => {
  const i = migrations.findIndex((m) => m.sql.some((s) => /CREATE TABLE [`"]media_usage[`"]/.test(s)));
  if (i < 0) throw new Error("no migration creates media_usage");
  return i;
};

// Two companies with media (one of them with three files), one without: sizes chosen so a wrong sum
// (another company's rows, a count instead of a sum) cannot come out right.
const MEDIA: [id: string, company: string, size: number][] = [
  ["m1", "c1", 1000],
  ["m2", "c1", 250_000],
  ["m3", "c1", 7],
  ["m4", "c2", 3_000_000_000], // over 2^31: the counter is 64-bit on both engines
];
const WANT = [
  { company_id: "c1", bytes: 251_007 },
  { company_id: "c2", bytes: 3_000_000_000 },
];
const COMPANIES = "INSERT INTO companies (id, slug, name, created_at) VALUES ('c1', 'one', 'One', 1), ('c2', 'two', 'Two', 1), ('c3', 'three', 'Three', 1)";
const mediaRow = "INSERT INTO media (id, company_id, filename, mime_type, size, sha256, path, created_at) VALUES (?, ?, 'f', 'image/png', ?, 'x', '/tmp/f', 1)";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

test.skipIf(TEST_ENGINE !== "sqlite")("SQLite: media_usage starts at each company's sum of media sizes", () => {
  const dir = mkdtempSync(join(tmpdir(), "sb-media-usage-"));
  dirs.push(dir);
  const file = join(dir, "switchboard.db");
  const upTo = creating(embeddedMigrations);
  const old = openDatabase(file);
  // The schema as the release before the counter left it (as src/db/migrate.test.ts makes it).
  const dialect = (old as unknown as { dialect: { migrate: (...args: unknown[]) => unknown } }).dialect;
  dialect.migrate(embeddedMigrations.slice(0, upTo), (old as unknown as { session: unknown }).session, { migrationsTable: "__drizzle_migrations" });
  old.$client.exec(COMPANIES);
  for (const m of MEDIA) old.$client.query(mediaRow).run(...m);
  old.close();

  const db = openDatabase(file);
  expect(migrate(db).applied).toBe(embeddedMigrations.length - upTo);
  expect(db.$client.query("SELECT company_id, bytes FROM media_usage ORDER BY company_id").all()).toEqual(WANT);
  db.close();
});

test.skipIf(TEST_ENGINE !== "postgres")("PostgreSQL: media_usage starts at each company's sum of media sizes", async () => {
  const url = await freshPostgresDatabase("sb_media_usage");
  const upTo = creating(embeddedPgMigrations);
  const sql = new SQL(url, { max: 1, connection: { client_min_messages: "warning" } });
  try {
    // The schema as the release before the counter left it, recorded as migratePostgresAsync records it.
    await sql.unsafe(`CREATE TABLE "__drizzle_migrations" (id serial PRIMARY KEY, hash text NOT NULL, created_at bigint NOT NULL)`);
    await sql.begin(async (tx) => {
      for (const m of embeddedPgMigrations.slice(0, upTo)) {
        for (const statement of m.sql) if (statement.trim()) await tx.unsafe(statement);
        await tx`INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`;
      }
    });
    await sql.unsafe(COMPANIES);
    for (const [id, company, size] of MEDIA)
      await sql`INSERT INTO media (id, company_id, filename, mime_type, size, sha256, path, created_at) VALUES (${id}, ${company}, 'f', 'image/png', ${size}, 'x', '/tmp/f', 1)`;

    expect((await migratePostgresAsync(url, { version: "0.0.0-test" })).applied).toBe(embeddedPgMigrations.length - upTo);
    const rows = await sql`SELECT company_id, bytes::float8 AS bytes FROM media_usage ORDER BY company_id`;
    expect([...rows]).toEqual(WANT);
  } finally {
    await sql.close();
  }
});
