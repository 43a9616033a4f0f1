/**
 * Our SQL is written once, in the portable form both engines read alike (`?` / `?N` parameters, SQLite's
 * upsert syntax as drizzle's SQLite builder writes it); on PostgreSQL each text is rewritten once (bunsql.ts
 * caches it) by these. Statements that are not portable are chosen per engine by their callers (dialect.ts).
 */
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

/**
 * NB! `$1::json` → `$1::text::json`. Bun reads each parameter's type from the server and, for json and jsonb,
 * encodes the value as JSON itself: our JSON text would arrive as one JSON string (`"[\"a\"]"`, a scalar)
 * instead of the array it spells. Typed as text first, it goes as it is, and the server parses it.
 */
export const asTextBeforeJson = (text: string): string => text.replace(/(\$\d+)::(jsonb?)\b/g, "$1::text::$2");
