/**
 * The SQL the two engines do not read alike, in one place (DESIGN §15). Most statements are written in the
 * subset both accept (`ON CONFLICT … DO NOTHING`, `coalesce`, `lower(x) LIKE lower(?)`, an alias on every
 * subquery in FROM, every `?N` used); the rest pick a variant here by engine.
 *
 * NB! Statement texts are cache keys (client.ts, postgres/compat.ts): build each variant once — with
 * `perEngine` at module or closure creation — and pick it per call, never rebuild the text per request.
 *
 * NB! PostgreSQL types every parameter from its context when the statement is prepared: a `?N` that the
 * text never uses, or one used only where no type follows (`? IS NULL` alone), fails to prepare.
 */
import { Database } from "bun:sqlite";
import type { Db, Engine } from "./client";

export type { Engine };

/** The engine behind a Db or behind its `$client` (bun:sqlite's Database, or the PostgreSQL facade). */
export function engineOf(conn: Db | Database): Engine {
  return conn instanceof Database ? "sqlite" : "engine" in conn ? conn.engine : "postgres";
}

/** Both variants of a statement (or of anything engine-bound), built once: `texts[engineOf(sqlite)]`. */
export function perEngine<T>(build: (engine: Engine) => T): Record<Engine, T> {
  return { sqlite: build("sqlite"), postgres: build("postgres") };
}

/**
 * A parameter SQLite does not look at while planning: `CAST(?N AS TEXT|INTEGER)`, same plan and index.
 * NB! SQLite plans some statements for the values bound to them and then prepares them again whenever a
 * parameter is bound anew — and bun binds on every call: a `LIMIT ?`, an `=` on an index column that also
 * gives the statement its order (ORDER BY, min()), a value compared with a partial index's condition
 * (`status = ?` where an index says `WHERE status = 'queued'`). Each call then costs 4–30 µs more (~3 % of
 * the main thread went to the job loop's claims so under HTTP load; bench/RESULTS.md, "Seventh round"). A CAST
 * is an expression to the planner, not a parameter. For statements on a hot path; PostgreSQL reads it alike.
 */
export function unplanned(param: string, type: "TEXT" | "INTEGER"): string {
  return `CAST(${param} AS ${type})`;
}

/**
 * The elements of a JSON array parameter as a table with one column `value`, for FROM: SQLite's
 * `json_each(?) alias`. `param` is the placeholder as the statement numbers it (`?`, `?1`). On PostgreSQL
 * the values are text; `cast` (e.g. "bigint") converts them for comparison with a non-text column.
 */
export function jsonTable(engine: Engine, alias: string, param = "?", cast?: string): string {
  if (engine === "sqlite") return `json_each(${param}) ${alias}`;
  return cast
    ? `(SELECT e::${cast} AS value FROM json_array_elements_text(${param}::json) AS x(e)) ${alias}`
    : `json_array_elements_text(${param}::json) AS ${alias}(value)`;
}

/** The elements of a JSON array parameter as a subquery of one column, for `x IN (…)`. See `jsonTable`. */
export function jsonValues(engine: Engine, param = "?", cast?: string): string {
  if (engine === "sqlite") return `SELECT value FROM json_each(${param})`;
  return `SELECT ${cast ? `value::${cast}` : "value"} FROM json_array_elements_text(${param}::json) AS j(value)`;
}

/**
 * The text at `path` (keys, e.g. `["media", "file", "id"]`) inside a JSON text column or expression: SQLite's
 * `json_extract(col, '$.a.b')`, PostgreSQL's `col::json #>> '{a,b}'`. Keys are written into the SQL: pass
 * constants only. NB! SQLite answers a JSON number as a number; compare with text on both engines.
 */
export function jsonText(engine: Engine, column: string, path: readonly string[]): string {
  for (const key of path) if (!/^[A-Za-z0-9_]+$/.test(key)) throw new Error(`jsonText: not a plain key: ${key}`);
  return engine === "sqlite" ? `json_extract(${column}, '$.${path.join(".")}')` : `(${column}::json #>> '{${path.join(",")}}')`;
}

/** The larger of two values (SQLite's scalar `max(a, b)`; PostgreSQL's `greatest`). */
export function greatestFn(engine: Engine): string {
  return engine === "sqlite" ? "max" : "greatest";
}

/**
 * A write refused by a constraint (unique, foreign key, not null, check): bun:sqlite's `SQLITE_CONSTRAINT*`
 * codes, PostgreSQL's SQLSTATE class 23.
 */
export function isConstraintViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_CONSTRAINT") || (code.length === 5 && code.startsWith("23")));
}

/**
 * For a statement built per call whose `?N` parameters are not all used (SQLite ignores an unused one,
 * PostgreSQL cannot type it): the text renumbered to the parameters it uses, and those arguments. Only
 * numbered parameters outside string literals; use it on PostgreSQL, where the text is not hot.
 */
export function compactParams<T>(sql: string, args: readonly T[]): { sql: string; args: T[] } {
  const used = new Map<number, number>();
  const out: T[] = [];
  const text = sql.replace(/'(?:[^']|'')*'|\?(\d+)/g, (m, n: string | undefined) => {
    if (n === undefined) return m;
    const from = Number(n);
    let to = used.get(from);
    if (to === undefined) {
      used.set(from, (to = out.length + 1));
      out.push(args[from - 1]!);
    }
    return `?${to}`;
  });
  return { sql: text, args: out };
}
