/**
 * Writes src/db/postgres/schema.gen.ts: a drizzle `pgTable` for every SQLite table of src/schema.ts, so the
 * `*.table.ts` files stay the one schema source (DESIGN §15). Run by `make migrations` before drizzle-kit.
 *
 * NB! The app runs its SQLite-dialect SQL on PostgreSQL unchanged, so PostgreSQL must store every value as
 * SQLite does: every `integer` column (numbers, ms timestamps, 0/1 booleans) is `bigint` in number mode, `real`
 * is `double precision`, `text` (json mode too) is `text`, `blob` is `bytea`. Names, NOT NULL, keys, unique
 * constraints, indexes (partial ones too), foreign keys, checks and constant defaults are kept.
 *
 * What a pgTable cannot say lives in hand-written migrations-pg/ files: the auto-numbering of a rowid-alias
 * column (`integer primary key`: SQLite numbers it when the app inserts NULL; PostgreSQL needs a sequence and
 * a BEFORE INSERT trigger — `rowidAliasColumns()` lists them) and the name search index that replaces FTS5.
 */
import { is, SQL, getTableColumns, type Column } from "drizzle-orm";
import { getTableConfig, SQLiteSyncDialect, SQLiteTable } from "drizzle-orm/sqlite-core";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import * as schema from "../src/schema";

export const PG_SCHEMA_FILE = join(import.meta.dir, "../src/db/postgres/schema.gen.ts");

const sqliteTables = () => (Object.entries(schema) as [string, unknown][]).filter((e): e is [string, SQLiteTable] => is(e[1], SQLiteTable));

/** SQLite storage class → the PostgreSQL column builder that stores the same values. */
const columnBuilders: Record<string, (name: string) => string> = {
  integer: (name) => `bigint(${q(name)}, { mode: "number" })`,
  real: (name) => `doublePrecision(${q(name)})`,
  text: (name) => `text(${q(name)})`,
  blob: (name) => `bytea(${q(name)})`,
};

/**
 * SQLite-only SQL in defaults, index predicates and checks, translated or refused. Refusing makes
 * `make migrations` fail naming the table, rather than writing SQL that PostgreSQL rejects or reads otherwise.
 */
const sqlTranslations: [RegExp, string][] = [
  [/`([^`]*)`/g, '"$1"'],
  [/\bifnull\(/gi, "coalesce("],
  [/\(\s*unixepoch\(\)\s*\*\s*1000\s*\)|\bunixepoch\('subsec'\)\s*\*\s*1000/gi, "(floor(extract(epoch from clock_timestamp()) * 1000)::bigint)"],
  [/\bunixepoch\(\)/gi, "(floor(extract(epoch from clock_timestamp()))::bigint)"],
];
const sqliteOnly =
  /\b(unixepoch|strftime|datetime|julianday|glob|randomblob|typeof|instr|total_changes|last_insert_rowid)\s*\(|\bCURRENT_(TIMESTAMP|DATE|TIME)\b|\bIS\s+NOT\s+(?!NULL\b)|\bIS\s+(?!NOT\b|NULL\b)/i;

const dialect = new SQLiteSyncDialect();
function pgSql(expr: SQL, where: string): string {
  const { sql: text, params } = dialect.sqlToQuery(expr);
  if (params.length) throw new Error(`${where}: a parameter in SQL (${text}); write the value inline`);
  const translated = sqlTranslations.reduce((s, [from, to]) => s.replace(from, to), text);
  if (sqliteOnly.test(translated)) throw new Error(`${where}: SQLite-only SQL (${text}); teach scripts/pg-schema.ts its PostgreSQL form`);
  return "sql`" + translated.replace(/[`\\]|\$\{/g, (m) => "\\" + m) + "`";
}

const q = (s: string) => JSON.stringify(s);

function pgDefault(value: unknown, where: string): string {
  if (is(value, SQL)) return pgSql(value, where);
  if (typeof value === "boolean") return value ? "1" : "0"; // boolean mode stores 0/1
  if (value instanceof Date) return String(value.getTime()); // timestamp_ms mode stores milliseconds
  if (typeof value === "number" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "object" && value !== null) return q(JSON.stringify(value)); // json mode stores the text
  throw new Error(`${where}: unsupported default ${String(value)}`);
}

/** `integer primary key` columns: SQLite's rowid, numbered by SQLite when NULL is inserted. */
export function rowidAliasColumns(): { table: string; column: string }[] {
  return sqliteTables().flatMap(([, table]) => {
    const config = getTableConfig(table);
    const pk = config.columns.filter((c) => c.primary).concat(config.primaryKeys.flatMap((p) => (p.columns.length === 1 ? p.columns : [])));
    return pk.length === 1 && pk[0]!.getSQLType() === "integer" ? [{ table: config.name, column: pk[0]!.name }] : [];
  });
}

function renderTable(exportName: string, table: SQLiteTable, exportNames: Map<unknown, string>): { code: string; usesBytea: boolean } {
  const config = getTableConfig(table);
  const keys = new Map<Column, string>(Object.entries(getTableColumns(table)).map(([key, column]) => [column, key]));
  const ref = (c: Column) => `t.${keys.get(c)}`;
  const rowid = new Set(
    rowidAliasColumns()
      .filter((r) => r.table === config.name)
      .map((r) => r.column),
  );
  let usesBytea = false;

  const columns = config.columns.map((c) => {
    const where = `${config.name}.${c.name}`;
    const sqlType = c.getSQLType();
    const builder = columnBuilders[sqlType];
    if (!builder) throw new Error(`${where}: no PostgreSQL mapping for SQLite type ${sqlType}`);
    usesBytea ||= sqlType === "blob";
    let code = builder(c.name);
    if (c.primary) code += ".primaryKey()";
    else if (c.notNull) code += ".notNull()";
    if (c.default !== undefined) code += `.default(${pgDefault(c.default, where)})`;
    if (c.isUnique) code += `.unique(${q(c.uniqueName!)})`;
    const note = rowid.has(c.name) ? " // rowid alias: numbered by a sequence and trigger (migrations-pg, search_and_sequences)" : "";
    return `    ${keys.get(c)}: ${code},${note}`;
  });

  const extras = [
    ...config.primaryKeys.map((p) => `primaryKey({ columns: [${p.columns.map(ref).join(", ")}] })`),
    ...config.uniqueConstraints.map((u) => `unique(${q(u.name!)}).on(${u.columns.map(ref).join(", ")})`),
    ...config.indexes.map(({ config: i }) => {
      const on = i.columns.map((c) => (is(c, SQL) ? pgSql(c, `index ${i.name}`) : ref(c as Column))).join(", ");
      return `${i.unique ? "uniqueIndex" : "index"}(${q(i.name)}).on(${on})${i.where ? `.where(${pgSql(i.where, `index ${i.name}`)})` : ""}`;
    }),
    ...config.foreignKeys.map((f) => {
      const r = f.reference();
      const target = exportNames.get(r.foreignTable);
      if (!target) throw new Error(`${config.name}: foreign key to a table not exported from src/schema.ts`);
      const actions = [
        f.onDelete && f.onDelete !== "no action" ? `.onDelete(${q(f.onDelete)})` : "",
        f.onUpdate && f.onUpdate !== "no action" ? `.onUpdate(${q(f.onUpdate)})` : "",
      ].join("");
      return `foreignKey({ columns: [${r.columns.map(ref).join(", ")}], foreignColumns: [${r.foreignColumns.map((c) => `${target}.${getKey(r.foreignTable, c)}`).join(", ")}] })${actions}`;
    }),
    ...config.checks.map((c) => `check(${q(c.name)}, ${pgSql(c.value, `check ${c.name}`)})`),
  ];
  const extra = extras.length ? `,\n  (t) => [\n${extras.map((e) => `    ${e},`).join("\n")}\n  ]` : "";
  return { code: `export const ${exportName} = pgTable(\n  ${q(config.name)},\n  {\n${columns.join("\n")}\n  }${extra},\n);\n`, usesBytea };
}

function getKey(table: unknown, column: Column): string {
  return Object.entries(getTableColumns(table as SQLiteTable)).find(([, c]) => c === column)![0];
}

/** The text of schema.gen.ts for the current `*.table.ts` files (the test compares it with the committed file). */
export function renderPgSchema(): string {
  const tables = sqliteTables();
  const exportNames = new Map<unknown, string>(tables.map(([name, table]) => [table, name]));
  const rendered = tables.map(([name, table]) => renderTable(name, table, exportNames));
  const code = rendered.map((r) => r.code).join("\n");
  const used = ["bigint", "check", "doublePrecision", "foreignKey", "index", "pgTable", "primaryKey", "text", "unique", "uniqueIndex"].filter((f) =>
    new RegExp(`\\b${f}\\(`).test(code),
  );
  const needsBytea = rendered.some((r) => r.usesBytea);
  return [
    "// Generated by scripts/pg-schema.ts from the *.table.ts files — do not edit. Regenerate with `make migrations`.",
    "// PostgreSQL mirror of src/schema.ts: same names and constraints, values stored as SQLite stores them.",
    ...(code.includes("sql`") ? ['import { sql } from "drizzle-orm";'] : []),
    `import { ${[...used, ...(needsBytea ? ["customType"] : [])].sort().join(", ")} } from "drizzle-orm/pg-core";`,
    "",
    ...(needsBytea ? ['const bytea = customType<{ data: Uint8Array }>({ dataType: () => "bytea" });', ""] : []),
    code,
  ].join("\n");
}

if (import.meta.main) {
  writeFileSync(PG_SCHEMA_FILE, renderPgSchema());
  const aliases = rowidAliasColumns().map((r) => `${r.table}.${r.column}`);
  console.log(`wrote ${PG_SCHEMA_FILE}; rowid-alias columns (need a sequence + trigger in migrations-pg): ${aliases.join(", ") || "none"}`);
}
