/**
 * migrate-to-postgres in process (the compiled binary's whole journey is test/e2e/migrate-to-postgres.e2e.test.ts):
 * every value of every table arrives as SQLite holds it, the target's schema is the same afterwards, and each
 * refusal names what it refuses and leaves the target without a row, so that a fixed source copies on the
 * next run.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../db/client";
import { openPostgres } from "../db/postgres/engine";
import { migrate } from "../db/migrate";
import { embeddedMigrations } from "../db/migrations.gen";
import { migratePostgresAsync } from "../db/postgres/migrate";
import { freshPostgresDatabase, postgresAvailable, POSTGRES_SKIP_REASON } from "../../test/helpers/postgres";
import { UsageError } from "./cli.util";
import { migrateToPostgres, redactUrl } from "./migrate-to-postgres";
import { POSTGRES_ONLY } from "./migrate-to-postgres.copy";

const BEYOND_DOUBLE = 9007199254740993n; // 2^53 + 1: a JS number cannot hold it

let dir: string;
let template: string;
let counter = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "sb-mtp-"));
  const db = openDatabase(join(dir, "build.db"));
  migrate(db);
  template = join(dir, "template.db");
  await db.sql("VACUUM INTO ?").run(template);
  db.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A copy of the migrated, empty template with `fill` applied (foreign keys off, so a test may break them). */
function source(fill: (s: Database) => void = () => {}): string {
  const path = join(dir, `source-${++counter}.db`);
  copyFileSync(template, path);
  const s = new Database(path, { safeIntegers: true });
  s.exec("PRAGMA foreign_keys = OFF");
  fill(s);
  s.close(true);
  return path;
}

/** Tricky values in the tables with the most shapes: quotes, backslashes, braces, unicode, "NULL", empty text, 2^53+1. */
function fillTricky(s: Database): void {
  s.run("INSERT INTO companies (id, slug, name, created_at) VALUES (?, ?, ?, ?)", ["co1", "acme", 'Acme "quoted" \\ back {brace}, comma', 1_700_000_000_000]);
  s.run("INSERT INTO companies (id, slug, name, created_at) VALUES (?, ?, ?, ?)", ["co2", "ünïcode", "NULL", BEYOND_DOUBLE]);
  const contact = s.prepare(
    "INSERT INTO contacts (seq, id, company_id, first_name, last_name, city, country, custom_fields, blocked, created_at, updated_at, deleted_at) VALUES (?, ?, 'co1', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
  );
  contact.run(1, "k1", "Zoë 李小龙 🙂", "NULL", "", null, JSON.stringify({ note: "line1\nline2\ttab", quote: 'say "hi"', n: 1.5 }), 0, 1, 2, null);
  contact.run(7, "k2", "O'Brien", "\\", "{a,b}", "DE", "{}", 1, 3, 4, 5);
  contact.run(8, "k3", "e\u0301 combining", "  spaced  ", "x", "GB", "{}", 0, BEYOND_DOUBLE, 6, null);
  contact.finalize();
  s.run("INSERT INTO tags (id, company_id, name, created_at) VALUES ('t1', 'co1', 'vip, \"gold\"', 1)");
  s.run("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES ('k1', 't1', 1), ('k2', 't1', 2)");
  s.run(
    "INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES ('co1', 'k1', 'email', 'zoë@example.test', 'verified', 1), ('co1', 'k2', 'whatsapp', '+4915100000001', 'verified', 2)",
  );
  s.run(
    "INSERT INTO ledger_entries (id, company_id, kind, amount, balance_after, message_id, description, created_at) VALUES ('l1', 'co1', 'credit', 25000000, 25000000, NULL, 'operator credit', 1), ('l2', 'co1', 'debit', -50000, 24950000, 'm1', 'hello_world', 2)",
  );
}

/** Every row of `table` as text (numbers and bigints as their digits), sorted: how both engines are compared. */
function sqliteRows(path: string, table: string, columns: string[]): string[] {
  const s = new Database(path, { readonly: true, safeIntegers: true });
  try {
    const rows = s.query(`SELECT ${columns.map((c) => `"${c}"`).join(", ")} FROM "${table}"`).values();
    return rows.map((r) => JSON.stringify(r.map((v) => (v === null ? null : v instanceof Uint8Array ? Buffer.from(v).toString("hex") : String(v))))).sort();
  } finally {
    s.close(true);
  }
}
async function postgresRows(sql: SQL, table: string, columns: string[]): Promise<string[]> {
  const rows = (await sql.unsafe(`SELECT ${columns.map((c) => `"${c}"`).join(", ")} FROM "${table}"`).values()) as unknown[][];
  return rows.map((r) => JSON.stringify(r.map((v) => (v === null ? null : v instanceof Uint8Array ? Buffer.from(v).toString("hex") : String(v))))).sort();
}
async function postgresColumns(sql: SQL): Promise<Map<string, string[]>> {
  const rows =
    (await sql`SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`) as {
      t: string;
      c: string;
    }[];
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.t, [...(out.get(r.t) ?? []), r.c]);
  for (const table of Object.keys(POSTGRES_ONLY)) out.delete(table);
  return out;
}
/** The parts of a schema the copy takes apart and puts back: constraints, indexes, triggers. */
async function schemaFacts(sql: SQL): Promise<string[]> {
  const constraints =
    (await sql`SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS f FROM pg_constraint WHERE connamespace = current_schema()::regnamespace`) as {
      f: string;
    }[];
  const indexes = (await sql`SELECT indexdef AS f FROM pg_indexes WHERE schemaname = current_schema()`) as { f: string }[];
  const triggers = (await sql`SELECT tgrelid::regclass::text || ' ' || tgname || ' ' || tgenabled::text AS f FROM pg_trigger WHERE NOT tgisinternal`) as {
    f: string;
  }[];
  return [...constraints, ...indexes, ...triggers].map((r) => r.f).sort();
}
async function rowsInTarget(sql: SQL): Promise<number> {
  let n = 0;
  for (const table of (await postgresColumns(sql)).keys()) n += Number((await sql.unsafe(`SELECT count(*) AS n FROM "${table}"`))[0].n);
  return n;
}
async function refusal(fn: () => unknown): Promise<string> {
  try {
    await fn();
  } catch (e) {
    expect(e).toBeInstanceOf(UsageError);
    return (e as Error).message;
  }
  throw new Error("expected a refusal, the migration went through");
}

test("redactUrl hides the password, keeps the rest", () => {
  expect(redactUrl("postgres://sw:s3cret@db.internal:5432/switchboard?sslmode=require")).toBe("postgres://sw:***@db.internal:5432/switchboard?sslmode=require");
  expect(redactUrl("postgres://sw@db/switchboard")).toBe("postgres://sw@db/switchboard");
});

test("no SQLite database, or one with pending migrations: refused before PostgreSQL is touched", async () => {
  const url = "postgres://nobody@127.0.0.1:1/never"; // never connected to: the refusals come first
  expect(await refusal(() => migrateToPostgres({ sourcePath: join(dir, "absent.db"), url }))).toContain("no SQLite database at");
  const old = join(dir, "old.db");
  const db = openDatabase(old);
  const { dialect, session } = db as unknown as { dialect: { migrate: (...args: unknown[]) => unknown }; session: unknown };
  dialect.migrate(embeddedMigrations.slice(0, 1), session, { migrationsTable: "__drizzle_migrations" });
  db.$client.exec("PRAGMA journal_mode = DELETE");
  db.$client.close(true);
  expect(await refusal(() => migrateToPostgres({ sourcePath: old, url }))).toContain(`has ${embeddedMigrations.length - 1} pending migration(s)`);
});

test("a SQLite database another connection has open is in use: refused", async () => {
  const path = source();
  const other = new Database(path);
  other.exec("PRAGMA journal_mode = WAL"); // as the appliance runs it
  other.query("SELECT count(*) FROM companies").get();
  try {
    expect(await refusal(() => migrateToPostgres({ sourcePath: path, url: "postgres://nobody@127.0.0.1:1/never" }))).toContain(
      "is in use (is switchboard serve running?)",
    );
  } finally {
    other.close(true);
  }
});

describe.skipIf(!postgresAvailable())(`on PostgreSQL${postgresAvailable() ? "" : ` (skipped: ${POSTGRES_SKIP_REASON})`}`, () => {
  test("every value of every table arrives as SQLite holds it; sequences continue; the schema is as migrated", async () => {
    const path = source(fillTricky);
    const url = await freshPostgresDatabase("sb_mtp");
    const reference = await freshPostgresDatabase("sb_mtp_ref"); // only migrated: the schema the copy must leave
    await migratePostgresAsync(reference, { version: "test" });

    const result = await migrateToPostgres({ sourcePath: path, url });
    const sql = new SQL(url, { max: 1 });
    const refSql = new SQL(reference, { max: 1 });
    try {
      const columns = await postgresColumns(sql);
      expect(result.tables.map((t) => t.table).sort()).toEqual([...columns.keys()].sort());
      expect(result.skipped.map((s) => s.table)).toEqual(expect.arrayContaining(["__drizzle_migrations", "contact_search", "contact_search_state"]));
      for (const [table, cols] of columns) {
        const want = sqliteRows(path, table, cols);
        expect({ table, rows: await postgresRows(sql, table, cols) }).toEqual({ table, rows: want });
        expect(result.tables.find((t) => t.table === table)!.rows).toBe(want.length);
      }
      expect(result.rows).toBe(12);
      // Parents before children: every table after the tables its foreign keys point to.
      const order = result.tables.map((t) => t.table);
      expect(order.indexOf("companies")).toBeLessThan(order.indexOf("contacts"));
      expect(order.indexOf("contacts")).toBeLessThan(order.indexOf("contact_tags"));
      expect(order.indexOf("tags")).toBeLessThan(order.indexOf("contact_tags"));
      expect(order.indexOf("webhook_deliveries")).toBeLessThan(order.indexOf("webhook_attempts"));

      expect(result.sequences).toEqual([{ sequence: "contacts_seq_seq", table: "contacts", column: "seq", value: 8 }]);
      const [next] = await sql`INSERT INTO contacts (seq, id, company_id, created_at, updated_at) VALUES (NULL, 'k4', 'co1', 9, 9) RETURNING seq`;
      expect(Number(next.seq)).toBe(9);

      // Foreign keys and non-unique indexes were taken down for the copy and are back, as migrated.
      expect(result.deferred.foreignKeys).toBeGreaterThan(15);
      expect(result.deferred.indexes).toBeGreaterThan(30);
      expect(await schemaFacts(sql)).toEqual(await schemaFacts(refSql));
      // Each company's balance row is its newest ledger entry's (the copy brings balances with the ledger).
      const balances =
        await sql`SELECT b.amount, (SELECT l.balance_after FROM ledger_entries l WHERE l.company_id = b.company_id ORDER BY l.id DESC LIMIT 1) AS last FROM balances b`;
      for (const b of balances) expect(Number(b.amount)).toBe(Number(b.last ?? 0));
    } finally {
      await sql.close();
      await refSql.close();
    }
  });

  const refusals: [string, (s: Database) => void, string, (s: Database) => void][] = [
    [
      "text with a NUL character",
      (s) => s.run("UPDATE contacts SET last_name = 'nul' || char(0) || 'byte' WHERE id = 'k2'"),
      "contacts.last_name (row 2) holds text with a NUL character",
      (s) => s.run("UPDATE contacts SET last_name = 'fixed' WHERE id = 'k2'"),
    ],
    [
      "text in an integer column (SQLite's loose typing)",
      (s) => s.run("UPDATE ledger_entries SET amount = 'lots' WHERE id = 'l2'"),
      'ledger_entries.amount (row 2) holds text "lots", which PostgreSQL\'s bigint column cannot store',
      (s) => s.run("UPDATE ledger_entries SET amount = -50000 WHERE id = 'l2'"),
    ],
    [
      "a fraction in an integer column",
      (s) => s.run("UPDATE contacts SET updated_at = 2.5 WHERE id = 'k1'"),
      "contacts.updated_at (row 1) holds number 2.5",
      (s) => s.run("UPDATE contacts SET updated_at = 2 WHERE id = 'k1'"),
    ],
    [
      "a row whose parent is missing",
      (s) => s.run("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES ('ghost', 't1', 1)"),
      "the copied rows of contact_tags break its foreign key",
      (s) => s.run("DELETE FROM contact_tags WHERE contact_id = 'ghost'"),
    ],
    [
      "a table PostgreSQL does not have",
      (s) => s.run("CREATE TABLE stray_notes (id TEXT PRIMARY KEY, body TEXT)"),
      "table stray_notes of the SQLite database has no counterpart in PostgreSQL",
      (s) => s.run("DROP TABLE stray_notes"),
    ],
    [
      "a column PostgreSQL does not have",
      (s) => s.run("ALTER TABLE tags ADD COLUMN colour TEXT"),
      "column tags.colour of the SQLite database has no counterpart in PostgreSQL",
      (s) => s.run("ALTER TABLE tags DROP COLUMN colour"),
    ],
  ];
  for (const [what, breakIt, message, fixIt] of refusals)
    test(`${what}: refused by name, no row left in PostgreSQL; fixed, the next run copies`, async () => {
      const path = source((s) => {
        fillTricky(s);
        breakIt(s);
      });
      const url = await freshPostgresDatabase("sb_mtp");
      const sql = new SQL(url, { max: 1 });
      try {
        expect(await refusal(() => migrateToPostgres({ sourcePath: path, url }))).toContain(message);
        expect(await rowsInTarget(sql)).toBe(0);
        const s = new Database(path);
        fixIt(s);
        s.close(true);
        const result = await migrateToPostgres({ sourcePath: path, url });
        expect(result.rows).toBe(12);
        expect(await rowsInTarget(sql)).toBe(12);
      } finally {
        await sql.close();
      }
    });

  test("a target holding any row is refused, naming the tables, and left as it was", async () => {
    const url = await freshPostgresDatabase("sb_mtp");
    await migrateToPostgres({ sourcePath: source(fillTricky), url });
    const sql = new SQL(url, { max: 1 });
    try {
      await sql`DELETE FROM contact_tags`;
      await sql`DELETE FROM contact_identities`;
      await sql`DELETE FROM contacts`;
      await sql`DELETE FROM ledger_entries`;
      await sql`DELETE FROM tags`; // only the companies are left
      const message = await refusal(() => migrateToPostgres({ sourcePath: source(fillTricky), url }));
      expect(message).toContain("the PostgreSQL database already holds data (companies)");
      expect(await rowsInTarget(sql)).toBe(2);
    } finally {
      await sql.close();
    }
  });

  test("a role that does not own the tables: nothing deferred, rows checked as they come, the same result", async () => {
    const url = await freshPostgresDatabase("sb_mtp");
    await migratePostgresAsync(url, { version: "test" });
    const owner = openPostgres(url);
    const role = `sb_mtp_app_${process.pid}`;
    for (const statement of [
      `CREATE ROLE ${role} LOGIN`,
      `GRANT USAGE, CREATE ON SCHEMA public TO ${role}`,
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`,
      `GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO ${role}`,
    ])
      await owner.sql(statement).run();
    await owner.end();
    const asApp = new URL(url);
    asApp.username = role;
    const result = await migrateToPostgres({ sourcePath: source(fillTricky), url: asApp.toString() });
    expect(result.deferred).toEqual({ foreignKeys: 0, indexes: 0 });
    expect(result.rows).toBe(12);
    expect(result.sequences[0]!.value).toBe(8);
  });

  test("a PostgreSQL that cannot be reached is refused naming --to, without the password", async () => {
    const message = await refusal(() => migrateToPostgres({ sourcePath: source(), url: "postgres://sw:s3cret@127.0.0.1:1/switchboard" }));
    expect(message).toStartWith("--to: could not connect to PostgreSQL");
    expect(message).toContain("postgres://sw:***@127.0.0.1:1/switchboard");
    expect(message).not.toContain("s3cret");
    expect(message).not.toContain("\n");
  });
});
