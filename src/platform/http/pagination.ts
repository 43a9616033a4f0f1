/**
 * Opaque keyset cursors. A list is ordered by a sort key plus the id as tie-breaker (ids are UUID v7, so
 * "newest first" is simply id descending). The cursor is base64url JSON of the last row's key; clients
 * must treat it as opaque. Query: `?limit=` (default 50, max 200) and `?cursor=`.
 */
import { t } from "elysia";
import { AppError } from "../errors";

export const PageQuery = {
  // NB! A string, parsed by pageLimit(): Elysia's integer coercion of query values reports range errors
  // without the key name, and every error must name its field.
  limit: t.Optional(t.String({ description: "page size, 1-200, default 50", "x-openapi-schema": { type: "integer", minimum: 1, maximum: 200, default: 50 } })),
  cursor: t.Optional(t.String({ description: "opaque cursor from page.nextCursor" })),
};

/** `?limit=` → 1..200 (default 50), or 422 naming `query:limit`. */
export function pageLimit(limit: string | undefined): number {
  if (limit === undefined) return 50;
  const n = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
  if (!(n >= 1 && n <= 200))
    throw new AppError("VALIDATION_FAILED", "limit must be an integer from 1 to 200", [
      { pointer: "query:limit", message: "must be an integer from 1 to 200" },
    ]);
  return n;
}

export function encodeCursor(key: unknown[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

/**
 * A cursor's key, or 422 naming `query:cursor`. Keys hold ids and names (text) and times (integers) only:
 * anything else (objects, fractions, numbers past 2^53, text with NUL) was not made by this API, and could
 * not be compared with a column alike on both engines (PostgreSQL refuses NUL in text and numbers out of
 * bigint's range).
 */
export function decodeCursor(cursor: string | undefined): unknown[] | null {
  if (!cursor) return null;
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.every((x) => (typeof x === "string" && !x.includes("\0")) || Number.isSafeInteger(x))) return v;
  } catch {}
  throw new AppError("VALIDATION_FAILED", "The cursor is not valid", [{ pointer: "query:cursor", message: "not a cursor returned by this API" }]);
}

/**
 * Cuts a page out of `limit + 1` fetched rows: the extra row only tells whether there is a next page.
 * `keyOf` gives the cursor key of a row (its sort columns, id last).
 */
export function toPage<R, O>(rows: R[], limit: number, keyOf: (row: R) => unknown[], map: (row: R) => O) {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(map),
    page: { nextCursor: more && last !== undefined ? encodeCursor(keyOf(last)) : null, limit },
  };
}

/** An optional ISO 8601 date-time query value (`?from=`), or 422 naming `query:<name>`. */
export function queryDate(value: string | undefined, name: string): Date | undefined {
  if (value === undefined) return undefined;
  const d = new Date(value);
  if (Number.isNaN(d.getTime()))
    throw new AppError("VALIDATION_FAILED", `${name} is not a date-time`, [{ pointer: `query:${name}`, message: "must be an ISO 8601 date-time" }]);
  return d;
}
