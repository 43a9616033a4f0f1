/**
 * The part of bun:sqlite's `Database` the appliance uses (`query`/`prepare` → `all`/`get`/`run`/`values`,
 * `exec`, `inTransaction`), over a PostgreSQL connection. drizzle's bun-sqlite driver and the services'
 * hot-path statements run on it unchanged: their SQL is the portable subset both engines read alike, with
 * `?` / `?N` parameters rewritten to `$N` here. Statements that are not portable are chosen per engine by
 * their callers (src/db/dialect.ts).
 */
import type { Database, Statement } from "bun:sqlite";
import type { PgConnection, PgResult, PgValue } from "./libpq";

/** `?` → `$1, $2, …` and `?N` → `$N`, outside string literals, quoted identifiers and comments. */
export function toPgParams(sql: string): string {
  let out = "";
  let next = 0;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql[i]!;
    if (ch === "'" || ch === '"') {
      const end = sql.indexOf(ch, i + 1);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop + 1);
      i = stop;
    } else if (ch === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      const stop = end === -1 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop - 1;
    } else if (ch === "?") {
      let j = i + 1;
      while (j < sql.length && sql[j]! >= "0" && sql[j]! <= "9") j++;
      if (j > i + 1) {
        out += `$${sql.slice(i + 1, j)}`;
        i = j - 1;
      } else out += `$${++next}`;
    } else out += ch;
  }
  return out;
}

/**
 * drizzle's SQLite builder writes an upsert's conflict target with qualified columns
 * (`on conflict ("t"."a", "t"."b")`), which SQLite reads and PostgreSQL refuses: the qualifiers go.
 */
export function toPgConflictTarget(sql: string): string {
  return sql.replace(/on conflict \(([^)]*)\)/gi, (_, cols: string) => `on conflict (${cols.replace(/"[^"]+"\."([^"]+)"/g, '"$1"')})`);
}

type Row = Record<string, unknown>;

/**
 * The savepoint statements db.tx writes (src/db/client.ts): deferred, so that they cost no round trip of
 * their own (PgConnection.defer: they travel with the next statement; a SAVEPOINT released with nothing
 * between is never sent).
 */
const SAVEPOINT = /^SAVEPOINT (\w+)$/;
const RELEASE = /^RELEASE (\w+)$/;
const ROLLBACK_TO = /^ROLLBACK TO (\w+); RELEASE (\w+)$/;

const EMPTY: PgResult = { fields: [], rows: [], changes: 0 };

class PgStatement {
  private readonly text: string;
  private readonly run_: (params: PgValue[]) => PgResult;
  constructor(conn: PgConnection, sql: string) {
    this.text = toPgConflictTarget(toPgParams(sql));
    const savepoint = SAVEPOINT.exec(sql)?.[1];
    const release = RELEASE.exec(sql)?.[1];
    this.run_ =
      savepoint !== undefined
        ? () => (conn.savepoint(savepoint), EMPTY)
        : release !== undefined
          ? () => (conn.release(release), EMPTY)
          : (params) => conn.query(this.text, params);
  }
  all(...params: PgValue[]): Row[] {
    const { fields, rows } = this.run_(params);
    return rows.map((r) => {
      const o: Row = {};
      for (let i = 0; i < fields.length; i++) o[fields[i]!] = r[i];
      return o;
    });
  }
  get(...params: PgValue[]): Row | null {
    return this.all(...params)[0] ?? null;
  }
  values(...params: PgValue[]): unknown[][] {
    return this.run_(params).rows;
  }
  run(...params: PgValue[]): { changes: number; lastInsertRowid: number } {
    return { changes: this.run_(params).changes, lastInsertRowid: 0 };
  }
  finalize(): void {}
}

/** A PostgreSQL connection dressed as the bun:sqlite `Database` the data layer expects. */
export function pgDatabase(conn: PgConnection): Database {
  const statements = new Map<string, PgStatement>();
  const prepare = (sql: string) => {
    let s = statements.get(sql);
    if (!s) {
      if (statements.size >= 5000) statements.clear();
      statements.set(sql, (s = new PgStatement(conn, sql)));
    }
    return s as unknown as Statement;
  };
  const exec = (sql: string) => {
    const to = ROLLBACK_TO.exec(sql);
    if (to && to[1] === to[2]) conn.rollbackTo(to[1]!);
    else if (sql === "ROLLBACK") conn.rollback();
    else conn.exec(sql);
  };
  const facade = {
    filename: "",
    query: prepare,
    prepare,
    exec,
    run: exec,
    get inTransaction() {
      return conn.inTransaction;
    },
    close: () => conn.close(),
    /** The connection itself (its round-trip counts, for profiles). */
    pg: conn,
  };
  return facade as unknown as Database;
}
