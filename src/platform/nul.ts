/**
 * NB! No text Switchboard takes may hold a NUL character (U+0000: `\u0000` in JSON, `%00` in a URL, a 0 byte
 * in an imported file). PostgreSQL cannot store one in text at all (and libpq would cut a parameter short at
 * it), so SQLite and PostgreSQL could not answer alike — and no name, message, tag or URL needs one. The
 * API refuses such a request with 422 VALIDATION_FAILED naming each place (http/error.plugin.ts), an import
 * refuses the row (contacts/import-rows.ts), before anything is stored.
 */
import type { ErrorDetail } from "./errors";

export const NUL_MESSAGE = "must not contain NUL characters (U+0000)";

/** A key as a JSON Pointer token; its NUL written `\u0000` (the pointer is text too: stored with import errors). */
const pointerToken = (k: string) => k.replace(/~/g, "~0").replace(/\//g, "~1").replace(/\0/g, "\\u0000");

/**
 * Where a parsed JSON value holds a NUL: a JSON Pointer (under `at`) per string or key, at most 50. The value
 * must be bounded in depth (the API's bodies are checked first; an import row is one line).
 */
export function nulPointers(v: unknown, at = "", out: ErrorDetail[] = []): ErrorDetail[] {
  if (out.length >= 50) return out;
  if (typeof v === "string") {
    if (v.includes("\0")) out.push({ pointer: at || "/", message: NUL_MESSAGE });
  } else if (Array.isArray(v)) v.forEach((x, i) => nulPointers(x, `${at}/${i}`, out));
  else if (v !== null && typeof v === "object")
    for (const [k, x] of Object.entries(v)) {
      if (k.includes("\0")) out.push({ pointer: `${at}/${pointerToken(k)}`, message: `the key ${NUL_MESSAGE}` });
      nulPointers(x, `${at}/${pointerToken(k)}`, out);
    }
  return out;
}

/** Query values and path parameters holding a NUL (`query:name`, `path:name`). */
export function nulInUrl(query: Record<string, unknown> | undefined, params: Record<string, unknown> | undefined): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  const has = (v: unknown): boolean => (typeof v === "string" ? v.includes("\0") : Array.isArray(v) && v.some(has));
  for (const [where, values] of [
    ["query", query],
    ["path", params],
  ] as const)
    if (values) for (const [k, v] of Object.entries(values)) if (has(v) || k.includes("\0")) out.push({ pointer: `${where}:${k}`, message: NUL_MESSAGE });
  return out;
}
