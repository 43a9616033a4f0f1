/**
 * migrate-to-postgres's copy (the command: migrate-to-postgres.ts): every SQLite table into the migrated, empty
 * PostgreSQL database in one transaction — schemas compared, parents first, foreign keys and non-unique indexes
 * deferred, row counts verified, sequences set.
 *
 * NB! Crash safety: the copy is one transaction. A crash, kill or lost connection at any point before COMMIT
 * leaves the target's tables empty (PostgreSQL rolls the transaction back), and the SQLite file is only read;
 * running the command again starts over. Only the schema migration of step 3 (migrate-to-postgres.ts) survives, and migrating again
 * finds nothing pending. A second run after a successful one is refused by the emptiness check.
 *
 * Speed: rows travel as one text array per column (`INSERT … SELECT * FROM unnest($1::bigint[], $2::text[],
 * …)`), thousands of rows per statement: one statement prepared per table, one bind per batch, and every
 * value passes through its column type's own input function, exactly as a text-format parameter would.
 */
import type { Database } from "bun:sqlite";
import type { Db } from "../db/client";
import { UsageError } from "./cli.util";
import { encoderFor } from "./migrate-to-postgres.encode";

/** SQLite tables that are not data: derived, or bookkeeping of one engine. Anything else must be copied. */
const SQLITE_ONLY: Record<string, string> = {
  __drizzle_migrations: "migration history (PostgreSQL keeps its own)",
  contact_search_state: "bookkeeping of the SQLite name search (PostgreSQL indexes names itself: contacts_name_search_idx)",
};
/** PostgreSQL tables that have no SQLite counterpart and are not copied into. */
export const POSTGRES_ONLY: Record<string, string> = {
  __drizzle_migrations: "migration history",
  switchboard_rate_buckets: "API keys' rate-limit buckets shared by the instances (SQLite keeps them in memory)",
  switchboard_send_slots: "channel accounts' send schedules shared by the instances (SQLite keeps them in memory)",
};

/** Flush a batch at this many rows or this many characters of array text, whichever comes first. */
const BATCH_ROWS = 5_000;
const BATCH_CHARS = 8 * 1024 * 1024;

export interface TableCopy {
  table: string;
  rows: number;
  ms: number;
}
export interface MigrationSummary {
  tables: TableCopy[];
  skipped: { table: string; reason: string }[];
  sequences: { sequence: string; table: string; column: string; value: number | null }[];
  /** Foreign keys and non-unique indexes built after the copy instead of maintained row by row (0: not the owner). */
  deferred: { foreignKeys: number; indexes: number };
  rows: number;
  ms: number;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

interface TargetColumn {
  name: string;
  type: string;
}

export type ProgressListener = (p: { table: string; rows: number; done: boolean }) => void;

/**
 * Copies every table of `sqlite` (a connection inside its own exclusive transaction) into the migrated, empty
 * PostgreSQL `db`, in one transaction (see the file's comment). Throws a UsageError naming the table, column
 * or constraint for anything it cannot map or store; nothing is committed then.
 */

export async function copySqliteToPostgres({
  sqlite,
  db,
  onProgress = () => {},
}: {
  sqlite: Database;
  db: Db;
  onProgress?: ProgressListener;
}): Promise<MigrationSummary> {
  const started = performance.now();
  const { copy, skipped } = sourceTables(sqlite);
  const target = await targetTables(db);

  for (const table of copy)
    if (!target.has(table))
      throw new UsageError(
        `table ${table} of the SQLite database has no counterpart in PostgreSQL (not in this binary's PostgreSQL schema); nothing was copied`,
      );
  for (const table of target.keys())
    if (!copy.includes(table) && !(table in POSTGRES_ONLY))
      throw new UsageError(`PostgreSQL table ${table} has no counterpart in the SQLite database (the schemas differ); nothing was copied`);
  for (const table of copy) {
    const have = new Set((sqlite.query("SELECT name FROM pragma_table_info(?)").all(table) as { name: string }[]).map((c) => c.name));
    const want = target.get(table)!;
    for (const c of have)
      if (!want.some((w) => w.name === c))
        throw new UsageError(`column ${table}.${c} of the SQLite database has no counterpart in PostgreSQL; nothing was copied`);
    for (const w of want)
      if (!have.has(w.name))
        throw new UsageError(`PostgreSQL column ${table}.${w.name} is not in the SQLite database (the schemas differ); nothing was copied`);
  }
  const order = await parentsFirst(db, copy);

  const tables: TableCopy[] = [];
  let deferred = { foreignKeys: 0, indexes: 0 };
  // One unit (one transaction): a refusal or failure anywhere leaves the target as it was.
  const sequences = await db.unit(async () => {
    const holding: string[] = [];
    for (const t of order) if (((await db.sql(`SELECT EXISTS (SELECT 1 FROM ${quote(t)}) AS x`).get()) as { x: number }).x === 1) holding.push(t);
    if (holding.length)
      throw new UsageError(
        `the PostgreSQL database already holds data (${holding.slice(0, 5).join(", ")}${holding.length > 5 ? `, … ${holding.length} tables` : ""}): migrate-to-postgres copies into an empty database only, so that it never mixes two appliances' data or copies twice; create a new database (docs/operations.md, "PostgreSQL")`,
      );
    const later = await deferIndexesAndForeignKeys(db, order);
    for (const table of order) tables.push(await copyTable({ sqlite, db, table, columns: target.get(table)!, onProgress }));
    await later.restore();
    deferred = { foreignKeys: later.foreignKeys, indexes: later.indexes };
    for (const t of tables) {
      const inSqlite = Number((sqlite.query(`SELECT count(*) AS n FROM ${quote(t.table)}`).get() as { n: bigint }).n);
      const inPostgres = ((await db.sql(`SELECT count(*) AS n FROM ${quote(t.table)}`).get()) as { n: number }).n;
      if (inSqlite !== t.rows || inPostgres !== t.rows)
        throw new Error(`row counts of ${t.table} differ after the copy (SQLite ${inSqlite}, read ${t.rows}, PostgreSQL ${inPostgres}); nothing was committed`);
    }
    return await resetSequences(db, order);
  });
  return { tables, skipped, sequences, deferred, rows: tables.reduce((a, t) => a + t.rows, 0), ms: Math.round(performance.now() - started) };
}

/**
 * pg_restore's order: for the copy, the foreign keys among the copied tables and their non-unique indexes
 * (partial and GIN ones too) are dropped, and afterwards built again from their own definitions
 * (pg_get_constraintdef / pg_get_indexdef) in the same transaction. A foreign key is then checked once over
 * whole tables (one join) instead of once per row (~10 µs each), and an index is built from sorted rows
 * instead of row by row. Measured with bench/migrate-to-postgres.bench.ts (bench/RESULTS.md). Primary keys
 * and unique indexes stay, so a duplicate fails the batch that brings it. An orphan row fails when its key is
 * added back, naming the constraint; a crash before COMMIT leaves everything as it was.
 *
 * Only the tables' owner may do this (the role that migrated them, normally); for another role everything
 * stays in place and each row is checked as it comes — slower, the same result.
 */
async function deferIndexesAndForeignKeys(db: Db, tables: string[]): Promise<{ foreignKeys: number; indexes: number; restore(): Promise<void> }> {
  type Row = { name: string; t: string; def: string; own: number };
  const mine = (rows: Row[]) => rows.filter((r) => tables.includes(r.t));
  const keys = mine(
    (await db
      .sql(
        `SELECT c.conname AS name, t.relname AS t, pg_get_constraintdef(c.oid) AS def, pg_has_role(t.relowner, 'USAGE') AS own
         FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE c.contype = 'f' AND n.nspname = current_schema() ORDER BY t.relname, c.conname`,
      )
      .all()) as Row[],
  );
  const indexes = mine(
    (await db
      .sql(
        `SELECT i.relname AS name, t.relname AS t, pg_get_indexdef(x.indexrelid) AS def, pg_has_role(t.relowner, 'USAGE') AS own
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
         WHERE n.nspname = current_schema() AND NOT x.indisunique AND NOT x.indisprimary
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)
         ORDER BY t.relname, i.relname`,
      )
      .all()) as Row[],
  );
  if (![...keys, ...indexes].every((r) => r.own === 1)) return { foreignKeys: 0, indexes: 0, async restore() {} };
  for (const k of keys) await db.sql(`ALTER TABLE ${quote(k.t)} DROP CONSTRAINT ${quote(k.name)}`).run();
  for (const i of indexes) await db.sql(`DROP INDEX ${quote(i.name)}`).run();
  return {
    foreignKeys: keys.length,
    indexes: indexes.length,
    async restore() {
      for (const i of indexes) await db.sql(i.def).run();
      for (const k of keys) {
        try {
          await db.sql(`ALTER TABLE ${quote(k.t)} ADD CONSTRAINT ${quote(k.name)} ${k.def}`).run();
        } catch (e) {
          throw new UsageError(
            `the copied rows of ${k.t} break its foreign key ${k.name} (${k.def}): ${(e as Error).message.replace(/\s*\n\s*/g, " ")}; nothing was copied`,
          );
        }
      }
    },
  };
}

/** The SQLite tables to copy, and those left out with the reason (FTS5's virtual and shadow tables, SQLITE_ONLY). */
function sourceTables(sqlite: Database): { copy: string[]; skipped: { table: string; reason: string }[] } {
  const all = sqlite.query("SELECT name, type FROM pragma_table_list WHERE schema = 'main' ORDER BY name").all() as { name: string; type: string }[];
  const copy: string[] = [];
  const skipped: { table: string; reason: string }[] = [];
  for (const { name, type } of all) {
    if (name.startsWith("sqlite_")) continue; // SQLite's own catalog and statistics
    if (type === "virtual") skipped.push({ table: name, reason: "SQLite full-text index (derived; PostgreSQL has its own index)" });
    else if (type === "shadow") skipped.push({ table: name, reason: "storage of a SQLite full-text index (derived)" });
    else if (type === "view") continue;
    else if (name in SQLITE_ONLY) skipped.push({ table: name, reason: SQLITE_ONLY[name]! });
    else copy.push(name);
  }
  return { copy, skipped };
}

/** The target's tables in the current schema, with their columns in order and their types as PostgreSQL writes them. */
async function targetTables(db: Db): Promise<Map<string, TargetColumn[]>> {
  const rows = (await db
    .sql(
      `SELECT c.relname AS t, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid
       WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
       ORDER BY c.relname, a.attnum`,
    )
    .all()) as { t: string; name: string; type: string }[];
  const tables = new Map<string, TargetColumn[]>();
  for (const r of rows) {
    let cols = tables.get(r.t);
    if (!cols) tables.set(r.t, (cols = []));
    cols.push({ name: r.name, type: r.type });
  }
  return tables;
}

/** `tables` ordered so that every table comes after the tables its foreign keys point to (ties by name). */
async function parentsFirst(db: Db, tables: string[]): Promise<string[]> {
  const edges = (await db
    .sql(
      `SELECT t.relname AS child, r.relname AS parent
       FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid
       JOIN pg_namespace n ON n.oid = t.relnamespace
       WHERE c.contype = 'f' AND n.nspname = current_schema()`,
    )
    .all()) as { child: string; parent: string }[];
  const parents = new Map(tables.map((t) => [t, new Set<string>()]));
  for (const e of edges) if (parents.has(e.child) && parents.has(e.parent)) parents.get(e.child)!.add(e.parent);
  const order: string[] = [];
  const placed = new Set<string>();
  while (order.length < tables.length) {
    const ready = tables.filter((t) => !placed.has(t) && [...parents.get(t)!].every((p) => placed.has(p)));
    if (!ready.length) {
      const left = tables.filter((t) => !placed.has(t));
      // A cycle (or a table referring to itself) would need rows in a particular order within a table.
      throw new Error(`cannot order tables ${left.join(", ")} by their foreign keys (a cycle); teach migrate-to-postgres to copy them`);
    }
    for (const t of ready) {
      order.push(t);
      placed.add(t);
    }
  }
  return order;
}

async function copyTable({
  sqlite,
  db,
  table,
  columns,
  onProgress,
}: {
  sqlite: Database;
  db: Db;
  table: string;
  columns: TargetColumn[];
  onProgress: ProgressListener;
}): Promise<TableCopy> {
  const started = performance.now();
  const names = columns.map((c) => c.name);
  let rows = 0;
  const encoders = columns.map((c) => encoderFor(c.type, () => `${table}.${c.name}`));
  const insert = db.sql(
    `INSERT INTO ${quote(table)} (${names.map(quote).join(", ")}) SELECT * FROM unnest(${columns.map((c, i) => `?${i + 1}::${c.type}[]`).join(", ")})`,
  );
  let batch: string[][] = columns.map(() => []);
  let batchRows = 0;
  let chars = 0;
  const flush = async () => {
    if (!batchRows) return;
    try {
      await insert.run(...batch.map((elements) => `{${elements.join(",")}}`));
    } catch (e) {
      throw new UsageError(`copying ${table} (rows ${rows - batchRows + 1}–${rows}) failed: ${(e as Error).message}; nothing was copied`);
    }
    batch = columns.map(() => []);
    batchRows = 0;
    chars = 0;
    onProgress({ table, rows, done: false });
  };
  // rowid order (primary-key order for WITHOUT ROWID tables): rows arrive in the order SQLite keeps them.
  const select = sqlite.query(`SELECT ${names.map(quote).join(", ")} FROM ${quote(table)}`);
  for (const row of select.iterate() as IterableIterator<Record<string, unknown>>) {
    rows++;
    for (let i = 0; i < names.length; i++) {
      const v = row[names[i]!];
      const element = v === null || v === undefined ? "NULL" : encoders[i]!(v, () => `${table}.${names[i]} (row ${rows})`);
      batch[i]!.push(element);
      chars += element.length + 1;
    }
    if (++batchRows >= BATCH_ROWS || chars >= BATCH_CHARS) await flush();
  }
  await flush();
  onProgress({ table, rows, done: true });
  return { table, rows, ms: Math.round(performance.now() - started) };
}

/**
 * Every sequence owned by a column of a copied table (SQLite's rowid alias contacts.seq → contacts_seq_seq,
 * and any serial or identity column) is set to the column's maximum, so the next row is numbered after the
 * copied ones (SQLite numbers a rowid max + 1, too). An empty table's sequence starts at its beginning.
 */
async function resetSequences(db: Db, tables: string[]): Promise<MigrationSummary["sequences"]> {
  const owned = (await db
    .sql(
      `SELECT s.relname AS sequence, t.relname AS t, a.attname AS col
       FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
       JOIN pg_class t ON t.oid = d.refobjid JOIN pg_namespace n ON n.oid = t.relnamespace
       JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
       WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') AND n.nspname = current_schema()
       ORDER BY s.relname`,
    )
    .all()) as { sequence: string; t: string; col: string }[];
  const out: MigrationSummary["sequences"] = [];
  for (const o of owned.filter((o) => tables.includes(o.t))) {
    const seq = `${quote(o.sequence)}`;
    const max = ((await db.sql(`SELECT max(${quote(o.col)}) AS m FROM ${quote(o.t)}`).get()) as { m: number | null }).m;
    // setval's argument is a regclass given as text: the quoted name, as SQL would write it.
    if (max === null) await db.sql(`SELECT setval(?::regclass, (SELECT seqstart FROM pg_sequence WHERE seqrelid = ?::regclass), false)`).run(seq, seq);
    else await db.sql(`SELECT setval(?::regclass, ?::bigint, true)`).run(seq, max);
    out.push({ sequence: o.sequence, table: o.t, column: o.col, value: max });
  }
  return out;
}
