/**
 * Hot-path SQL without drizzle's per-call query building (~20–40 µs each): `db.$client.query(sql)`
 * compiles a statement once and bun caches it by its text. `mapRow` turns a raw snake_case row into the
 * drizzle-typed camelCase row of a table (timestamps → Date, JSON columns parsed, booleans), so callers
 * keep the same types as with drizzle.
 */
import { Column, getTableColumns, type Table } from "drizzle-orm";
import type { Param, Statement } from "./client";

type Mapper = (raw: Record<string, unknown>) => Record<string, unknown>;
const mappers = new WeakMap<Table, Mapper>();

/**
 * One function per table, compiled from its columns: an object literal of straight reads, a decoder call only
 * for columns whose driver value is not the value (JSON, booleans, timestamps). The generic loop it replaced
 * (a closure per column, keys added one by one) cost ~1 µs per message row read, four times per message.
 */
function compileMapper(table: Table): Mapper {
  const cols = Object.entries(getTableColumns(table)) as [string, Column][];
  const fields = cols.map(([key, col], i) => {
    const read = `r[${JSON.stringify(col.name)}]`;
    return col.mapFromDriverValue === Column.prototype.mapFromDriverValue
      ? `${JSON.stringify(key)}: ${read}`
      : `${JSON.stringify(key)}: (v = ${read}) == null ? v : c[${i}].mapFromDriverValue(v)`;
  });
  // NB! Only column names and property keys (JSON-quoted) reach the source: no value of a row.
  const build = new Function("c", `return (r) => { let v; return { ${fields.join(", ")} }; };`) as (c: Column[]) => Mapper;
  return build(cols.map(([, col]) => col));
}

export function mapRow<T extends Table>(table: T, raw: Record<string, unknown> | null | undefined): T["$inferSelect"] | undefined {
  if (!raw) return undefined;
  let m = mappers.get(table);
  if (!m) mappers.set(table, (m = compileMapper(table)));
  return m(raw) as T["$inferSelect"];
}

/**
 * Inserts a drizzle-typed row (camelCase) with one cached statement per table, its arguments read by a
 * function compiled from the columns like `mapRow`'s (a message row has 27 columns: the generic loop cost
 * ~3 µs of a POST /messages). A column left undefined takes its literal default, else NULL.
 */
type Inserter = (statement: { run(...args: never[]): unknown }, row: Record<string, unknown>) => unknown;
const inserts = new WeakMap<Table, { sql: string; insert: Inserter }>();
function compileInsert(table: Table): { sql: string; insert: Inserter } {
  const cols = Object.entries(getTableColumns(table)) as [string, Column][];
  const name = (table as unknown as { [k: symbol]: string })[Symbol.for("drizzle:Name")];
  const defaults = cols.map(([, col]) => (col.default !== undefined && typeof col.default !== "object" ? col.default : null));
  const args = cols.map(([key, col], i) => {
    const read = `(v = r[${JSON.stringify(key)}]) === undefined ? d[${i}]`;
    return col.mapToDriverValue === Column.prototype.mapToDriverValue ? `${read} : v` : `${read} : v === null ? null : c[${i}].mapToDriverValue(v)`;
  });
  // NB! Only property keys (JSON-quoted) reach the source: no value of a row.
  const build = new Function("c", "d", `return (s, r) => { let v; return s.run(${args.join(", ")}); };`) as (c: Column[], d: unknown[]) => Inserter;
  return {
    sql: `INSERT INTO "${name}" (${cols.map(([, c]) => `"${c.name}"`).join(", ")}) VALUES (${cols.map(() => "?").join(", ")})`,
    insert: build(
      cols.map(([, col]) => col),
      defaults,
    ),
  };
}

export function insertRow<T extends Table>(db: { $client: import("bun:sqlite").Database }, table: T, row: T["$inferInsert"]): void {
  let plan = inserts.get(table);
  if (!plan) inserts.set(table, (plan = compileInsert(table)));
  plan.insert(db.$client.query(plan.sql), row as Record<string, unknown>);
}

/** The UPDATE of each set of changed columns of a table (updateById), built once. */
const updates = new WeakMap<Table, Map<string, { sql: string; keys: string[]; cols: { mapToDriverValue(v: unknown): unknown }[] } | null>>();
function updatePlan<T extends Table>(table: T, changes: Partial<T["$inferSelect"]>, guard?: string): { sql: string; values: unknown[] } | null {
  const given = changes as Record<string, unknown>;
  const keys: string[] = [];
  for (const k in given) if (given[k] !== undefined) keys.push(k);
  if (!keys.length) return null;
  let plans = updates.get(table);
  if (!plans) updates.set(table, (plans = new Map()));
  const signature = guard ? `${keys.join(",")}|${guard}` : keys.join(",");
  let plan = plans.get(signature);
  if (plan === undefined) {
    // Keys that are not columns of the table are ignored.
    const all = getTableColumns(table) as Record<string, { name: string; mapToDriverValue(v: unknown): unknown }>;
    const known = keys.filter((k) => all[k]);
    const name = (table as unknown as { [k: symbol]: string })[Symbol.for("drizzle:Name")];
    plan = known.length
      ? {
          sql: `UPDATE "${name}" SET ${known.map((k) => `"${all[k]!.name}" = ?`).join(", ")} WHERE "id" = ?${guard ? ` AND "${all[guard]!.name}" = ?` : ""}`,
          keys: known,
          cols: known.map((k) => all[k]!),
        }
      : null;
    plans.set(signature, plan);
  }
  if (!plan) return null;
  const { sql, keys: known, cols } = plan;
  return { sql, values: known.map((k, i) => (given[k] === null ? null : cols[i]!.mapToDriverValue(given[k]))) };
}

/** `insertRow` on the asynchronous contract (a store's `db.sql`): the same statement and arguments. */
export async function insertInto<T extends Table>(db: { sql(text: string): Statement }, table: T, row: T["$inferInsert"]): Promise<void> {
  let plan = inserts.get(table);
  if (!plan) inserts.set(table, (plan = compileInsert(table)));
  await plan.insert(db.sql(plan.sql) as never, row as Record<string, unknown>);
}

/**
 * `UPDATE table SET <changed columns> WHERE id = ?` (a store's `db.sql`), the statement cached per set of columns;
 * nothing is run when no column of the table changed. `onlyIf`: the row is changed only while that column still
 * holds that value (`AND "col" = ?`). Resolves to the rows changed.
 */
export async function updateById<T extends Table>(
  db: { sql(text: string): Statement },
  table: T,
  id: string,
  changes: Partial<T["$inferSelect"]>,
  onlyIf?: { column: keyof T["$inferSelect"] & string; value: string | number },
): Promise<number> {
  const plan = updatePlan(table, changes, onlyIf?.column);
  if (!plan) return 0;
  const { changes: n } = onlyIf
    ? await db.sql(plan.sql).run(...(plan.values as Param[]), id, onlyIf.value)
    : await db.sql(plan.sql).run(...(plan.values as Param[]), id);
  return n;
}
