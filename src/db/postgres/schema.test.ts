/**
 * The PostgreSQL schema stays in step with the SQLite one (DESIGN §15): schema.gen.ts is what the generator
 * makes of the current `*.table.ts` files, and a PostgreSQL database migrated with migrations-pg/ has the tables,
 * columns, keys, indexes, foreign keys and defaults of a SQLite database migrated with migrations/ — described
 * alike as one line per fact, so a drift fails naming its table and column.
 */
import { expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { SQL } from "bun";
import { readFileSync } from "node:fs";
import { openDatabase } from "../client";
import { migrate } from "../migrate";
import { embeddedPgMigrations } from "./migrations.gen";
import { PG_SCHEMA_FILE, renderPgSchema, rowidAliasColumns } from "../../../scripts/pg-schema";
import { freshPostgresDatabase, postgresAvailable, POSTGRES_SKIP_REASON } from "../../../test/helpers/postgres";

/** SQLite-only: FTS5 name search (PostgreSQL has contacts_name_search_idx instead) and bookkeeping. */
const sqliteOnlyTable = (name: string) => name.startsWith("contact_search") || name.startsWith("sqlite_") || name === "__drizzle_migrations";
const PG_ONLY_INDEXES = new Set(["contacts_name_search_idx"]);
/** PostgreSQL-only: the caches' commit counter (PRAGMA data_version's twin, migrations-pg/0002). */
const PG_ONLY_TABLES = new Set(["switchboard_rate_buckets", "switchboard_send_slots"]);
const rowid = new Set(rowidAliasColumns().map((r) => `${r.table}.${r.column}`));

test("schema.gen.ts is what scripts/pg-schema.ts makes of the *.table.ts files", () => {
  const committed = readFileSync(PG_SCHEMA_FILE, "utf8");
  const fresh = renderPgSchema();
  if (committed !== fresh) {
    const [want, have] = [fresh.split("\n"), committed.split("\n")];
    const line = want.findIndex((l, i) => l !== have[i]);
    const table =
      want
        .slice(0, line + 1)
        .findLast((l) => l.startsWith("export const"))
        ?.split(" ")[2] ?? "(header)";
    throw new Error(`src/db/postgres/schema.gen.ts is stale, run \`make migrations\` (table ${table}, line ${line + 1}: ${want[line]?.trim()})`);
  }
});

test("the only rowid-alias column is contacts.seq (a new one needs its sequence and trigger in migrations-pg)", () => {
  expect([...rowid]).toEqual(["contacts.seq"]);
});

const pgType: Record<string, string> = { bigint: "integer", "double precision": "real", text: "text", bytea: "blob" };
const pgAction: Record<string, string> = { a: "no action", r: "restrict", c: "cascade", n: "set null", d: "set default" };
const sqliteDefault = (d: string | null) => (d === "false" ? "0" : d === "true" ? "1" : d);
const pgDefault = (d: string | null) => d?.replace(/::[a-z ]+$/, "") ?? null;

function sqliteFacts(sqlite: Database): string[] {
  const facts: string[] = [];
  const tables = (sqlite.query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[])
    .map((r) => r.name)
    .filter((n) => !sqliteOnlyTable(n));
  for (const t of tables) {
    facts.push(`${t}: table`);
    const cols = sqlite.query('SELECT name, type, "notnull" AS nn, dflt_value AS d, pk FROM pragma_table_info(?)').all(t) as {
      name: string;
      type: string;
      nn: number;
      d: string | null;
      pk: number;
    }[];
    for (const c of cols) {
      const d = rowid.has(`${t}.${c.name}`) ? "(numbered)" : sqliteDefault(c.d);
      facts.push(`${t}.${c.name}: ${c.type.toLowerCase()}${c.nn ? " not null" : ""}${d === null ? "" : ` default ${d}`}`);
    }
    const pk = cols.filter((c) => c.pk).sort((a, b) => a.pk - b.pk);
    if (pk.length) facts.push(`${t}: primary key (${pk.map((c) => c.name).join(",")})`);
    const indexes = sqlite.query("SELECT name, \"unique\" AS u, partial FROM pragma_index_list(?) WHERE origin != 'pk'").all(t) as {
      name: string;
      u: number;
      partial: number;
    }[];
    for (const i of indexes) {
      const on = (sqlite.query("SELECT name FROM pragma_index_info(?) ORDER BY seqno").all(i.name) as { name: string }[]).map((r) => r.name).join(",");
      facts.push(`${t}: ${i.u ? "unique " : ""}index ${i.name} (${on})${i.partial ? " partial" : ""}`);
    }
    const fks = sqlite
      .query('SELECT id, "from" AS f, "table" AS target, "to" AS col, on_update AS u, on_delete AS d FROM pragma_foreign_key_list(?) ORDER BY id, seq')
      .all(t) as { id: number; f: string; target: string; col: string; u: string; d: string }[];
    for (const id of new Set(fks.map((f) => f.id))) {
      const parts = fks.filter((f) => f.id === id);
      facts.push(
        `${t}: foreign key (${parts.map((p) => p.f).join(",")}) → ${parts[0]!.target}(${parts.map((p) => p.col).join(",")}) on delete ${parts[0]!.d.toLowerCase()} on update ${parts[0]!.u.toLowerCase()}`,
      );
    }
  }
  return facts.sort();
}

async function postgresFacts(sql: SQL): Promise<string[]> {
  const facts: string[] = [];
  const tables = (await sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`) as {
    name: string;
  }[];
  for (const { name: t } of tables) facts.push(`${t}: table`);
  const cols =
    (await sql`SELECT table_name AS t, column_name AS name, data_type AS type, is_nullable AS nullable, column_default AS d FROM information_schema.columns WHERE table_schema = 'public'`) as {
      t: string;
      name: string;
      type: string;
      nullable: string;
      d: string | null;
    }[];
  for (const c of cols) {
    const d = rowid.has(`${c.t}.${c.name}`) ? (c.d?.startsWith("nextval(") ? "(numbered)" : `${c.d} (not a sequence)`) : pgDefault(c.d);
    facts.push(`${c.t}.${c.name}: ${pgType[c.type] ?? c.type}${c.nullable === "NO" ? " not null" : ""}${d === null ? "" : ` default ${d}`}`);
  }
  const indexes = (await sql`
    SELECT t.relname AS t, i.relname AS name, x.indisunique AS u, x.indisprimary AS pk, x.indpred IS NOT NULL AS partial,
      (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(x.indkey) WITH ORDINALITY k(attnum, n)
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum) AS on
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    JOIN pg_namespace s ON s.oid = t.relnamespace WHERE s.nspname = 'public'`) as {
    t: string;
    name: string;
    u: boolean;
    pk: boolean;
    partial: boolean;
    on: string;
  }[];
  for (const i of indexes) {
    if (PG_ONLY_INDEXES.has(i.name)) continue;
    facts.push(i.pk ? `${i.t}: primary key (${i.on})` : `${i.t}: ${i.u ? "unique " : ""}index ${i.name} (${i.on})${i.partial ? " partial" : ""}`);
  }
  const fks = (await sql`
    SELECT t.relname AS t, r.relname AS target, c.confdeltype AS d, c.confupdtype AS u,
      (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(c.conkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS f,
      (SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(c.confkey) WITH ORDINALITY k(attnum, n) JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum) AS col
    FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
    JOIN pg_namespace s ON s.oid = t.relnamespace WHERE c.contype = 'f' AND s.nspname = 'public'`) as {
    t: string;
    target: string;
    d: string;
    u: string;
    f: string;
    col: string;
  }[];
  for (const f of fks) facts.push(`${f.t}: foreign key (${f.f}) → ${f.target}(${f.col}) on delete ${pgAction[f.d]} on update ${pgAction[f.u]}`);
  return facts.filter((f) => !PG_ONLY_TABLES.has(f.split(/[.:]/)[0]!)).sort();
}

test.skipIf(!postgresAvailable())(
  `migrations-pg give PostgreSQL the schema migrations/ give SQLite${postgresAvailable() ? "" : ` (skipped: ${POSTGRES_SKIP_REASON})`}`,
  async () => {
    const sql = new SQL(await freshPostgresDatabase("sb_schema"), { max: 1 });
    const db = openDatabase(":memory:");
    try {
      for (const migration of embeddedPgMigrations) for (const statement of migration.sql) if (statement.trim()) await sql.unsafe(statement);
      migrate(db);
      const expected = sqliteFacts(db.$client);
      const actual = await postgresFacts(sql);
      expect(expected.length).toBeGreaterThan(100);
      // Each side's lines the other lacks; both empty when the schemas match.
      expect({ onlyInSqlite: expected.filter((f) => !actual.includes(f)), onlyInPostgres: actual.filter((f) => !expected.includes(f)) }).toEqual({
        onlyInSqlite: [],
        onlyInPostgres: [],
      });

      // contacts.seq numbers itself whether the insert leaves it out or passes NULL (as the app does).
      await sql`INSERT INTO companies (id, slug, name, created_at) VALUES ('c1', 'acme', 'Acme', 1)`;
      await sql`INSERT INTO contacts (seq, id, company_id, first_name, last_name, created_at, updated_at) VALUES (NULL, 'k1', 'c1', 'Ada', 'Lovelace', 1, 1)`;
      await sql`INSERT INTO contacts (seq, id, company_id, first_name, created_at, updated_at) VALUES (NULL, 'k2', 'c1', 'Grace', 1, 1)`;
      await sql`INSERT INTO contacts (id, company_id, last_name, created_at, updated_at) VALUES ('k3', 'c1', 'Hopper', 1, 1)`;
      expect(await sql`SELECT id, seq, blocked, custom_fields FROM contacts ORDER BY seq`).toEqual([
        { id: "k1", seq: "1", blocked: "0", custom_fields: "{}" },
        { id: "k2", seq: "2", blocked: "0", custom_fields: "{}" },
        { id: "k3", seq: "3", blocked: "0", custom_fields: "{}" },
      ]);

      // The name search index replaces FTS5: a GIN index on switchboard_name_tsvector, used by queries written the
      // same way (folded like FTS5: name-search.test.ts).
      const [search] = await sql`SELECT indexdef FROM pg_indexes WHERE indexname = 'contacts_name_search_idx'`;
      expect(search?.indexdef).toContain("USING gin (switchboard_name_tsvector(first_name, last_name))");
      const found = await sql`SELECT id FROM contacts WHERE switchboard_name_tsvector(first_name, last_name) @@ switchboard_name_tsquery('LOVELACE')`;
      expect(found).toEqual([{ id: "k1" }]);
    } finally {
      db.close();
      await sql.close();
    }
  },
  60_000,
);
