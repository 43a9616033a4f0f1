/**
 * Every error becomes `{"error": {code, message, requestId, details}}` here and nowhere else: thrown
 * AppErrors, Elysia validation and parse errors (422 VALIDATION_FAILED with a pointer per problem),
 * unknown routes (404 NOT_FOUND), and anything unexpected (500 INTERNAL, logged, nothing leaked).
 */
import { Value, ValueErrorType, type ValueError } from "@sinclair/typebox/value";
import { Elysia, type ValidationError, type TSchema } from "elysia";
import { AppError, type ErrorDetail } from "../errors";
import type { Logger } from "../logger";
import { nulInUrl, nulPointers } from "../nul";
import { pathOf, requestFacts } from "./request-context";

export function errorBody(requestId: string | undefined, code: string, message: string, details: ErrorDetail[] = []) {
  return { error: { code, message, requestId: requestId ?? null, details } };
}

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

const sentBodies = new WeakMap<Request, unknown>();

const TYPE_NAMES: Record<string, string> = {
  string: "a string",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  null: "null",
};

/** The closed set a schema allows (enum, or a union of literals), if it is one. */
function choices(schema: TSchema | undefined): unknown[] | null {
  if (!schema) return null;
  if (Array.isArray(schema.enum)) return schema.enum;
  if (Array.isArray(schema.anyOf) && schema.anyOf.every((b: TSchema) => "const" in b)) return schema.anyOf.map((b: TSchema) => b.const);
  return null;
}

/** One TypeBox error → a plain-language message (never the library's wording). */
function plainMessage(e: ValueError): string {
  const s = e.schema as TSchema;
  if (e.type === ValueErrorType.ObjectRequiredProperty) return "is required";
  const list = choices(s);
  if (list) return `must be one of: ${list.join(", ")}`;
  // A union whose branch of the value's own type rejects it (a too-long string where a string or null is
  // allowed): that branch's reason, not "must be a string or null".
  if (e.type === ValueErrorType.Union && Array.isArray(s.anyOf)) {
    const v = e.value;
    const type = v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v;
    const branch = (s.anyOf as TSchema[]).find((b) => b.type === type || (type === "integer" && b.type === "number"));
    const first = branch ? Value.Errors(branch, v).First() : undefined;
    if (first) return plainMessage(first);
  }
  switch (e.type) {
    case ValueErrorType.ObjectAdditionalProperties:
      return "is not a known field";
    case ValueErrorType.StringMinLength:
      return s.minLength === 1 ? "must not be empty" : `must be at least ${s.minLength} characters`;
    case ValueErrorType.StringMaxLength:
      return `must be at most ${s.maxLength} characters`;
    case ValueErrorType.StringFormat:
      return s.format === "uuid" ? "must be a UUID" : s.format === "date-time" ? "must be an ISO 8601 date-time" : `must be a valid ${s.format}`;
    case ValueErrorType.StringPattern:
      return s.description ? `has the wrong format (${s.description})` : `must match ${s.pattern}`;
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return `must be at least ${s.minimum}`;
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return `must be at most ${s.maximum}`;
    case ValueErrorType.ArrayMinItems:
      return `must have at least ${s.minItems} item${s.minItems === 1 ? "" : "s"}`;
    case ValueErrorType.ArrayMaxItems:
      return `must have at most ${s.maxItems} items`;
    case ValueErrorType.ObjectMinProperties:
      return s.minProperties === 1 && s.properties
        ? `give at least one of ${Object.keys(s.properties).join(", ")}`
        : `must have at least ${s.minProperties} keys`;
    case ValueErrorType.ObjectMaxProperties:
      return `must have at most ${s.maxProperties} keys`;
    case ValueErrorType.ArrayUniqueItems:
      return "must not repeat items";
    case ValueErrorType.Literal:
      return `must be ${JSON.stringify(s.const)}`;
  }
  const types = Array.isArray(s.anyOf) ? s.anyOf.map((b: TSchema) => b.type).filter(Boolean) : [s.type].flat().filter(Boolean);
  if (types.length) return `must be ${[...new Set(types as string[])].map((t) => TYPE_NAMES[t] ?? t).join(" or ")}`;
  return "is invalid";
}

/**
 * Elysia/TypeBox validation errors → our details: one per offending field, in plain language. Errors are
 * recomputed on the body the client sent (see sentBodies); `type` says where the value came from.
 */
function validationDetails(error: ValidationError, sent: unknown): ErrorDetail[] {
  const where = (error as unknown as { type: string }).type;
  const prefix = where === "query" ? "query:" : where === "headers" ? "header:" : where === "params" ? "path:" : "";
  const validator = (error as unknown as { validator?: { schema?: TSchema } & TSchema }).validator;
  const schema = validator?.schema ?? validator;
  let all: ValueError[];
  try {
    all = where === "body" && sent !== undefined && schema ? [...Value.Errors(schema, sent)] : (error.all as ValueError[]);
  } catch {
    all = error.all as ValueError[];
  }
  if (!all.length) all = error.all as ValueError[];
  all = all.flatMap(explainTaggedUnion);
  const byPointer = new Map<string, ErrorDetail>();
  for (const e of all) {
    const pointer = prefix ? `${prefix}${e.path.replace(/^\//, "")}` : e.path || "/";
    // The first error at a path is the most specific (TypeBox reports "required" before the type).
    if (byPointer.has(pointer)) continue;
    // A problem inside a value already reported (e.g. union branches) adds nothing.
    if ([...byPointer.keys()].some((p) => pointer.startsWith(p + "/"))) continue;
    byPointer.set(pointer, { pointer, message: plainMessage(e) });
  }
  return [...byPointer.values()].slice(0, 50);
}

/** The `type` values of a union of objects told apart by a literal `type` (a tagged union), else null. */
function unionTags(schema: TSchema): string[] | null {
  if (!Array.isArray(schema.anyOf)) return null;
  const tags = (schema.anyOf as TSchema[]).map((b) => b.type === "object" && b.properties?.type?.const);
  return tags.every((x) => typeof x === "string") ? (tags as string[]) : null;
}

/**
 * A tagged union's failure (e.g. a campaign audience) reported where the mistake is: the branch the value's own
 * `type` names explains it field by field (`/audience/match`, `/audience/tags`), and a missing or unknown `type`
 * is reported at `/…/type` with the allowed types — not one "is required" at the union for everything.
 */
function explainTaggedUnion(e: ValueError): ValueError[] {
  const s = e.schema as TSchema;
  const tags = e.type === ValueErrorType.Union ? unionTags(s) : null;
  const v = e.value as Record<string, unknown> | null;
  if (!tags || v === null || typeof v !== "object" || Array.isArray(v)) return [e];
  const at = (rel: string) => `${e.path}${rel}`;
  const i = tags.indexOf(v.type as string);
  if (i < 0) {
    const typeSchema = { anyOf: tags.map((t) => ({ const: t })) } as unknown as TSchema;
    return [
      { ...e, type: v.type === undefined ? ValueErrorType.ObjectRequiredProperty : ValueErrorType.Union, schema: typeSchema, path: at("/type"), value: v.type },
    ];
  }
  const branch = (s.anyOf as TSchema[])[i]!;
  const inner = [...Value.Errors(branch, v)].map((x) => ({ ...x, path: at(x.path) }));
  return inner.length ? inner : [e];
}

const MAX_BODY_DEPTH = 64;

const TOO_DEEP = Symbol("too deep");

// A NUL anywhere in the body (src/platform/nul.ts), noted by copyBody: one flag, not a path per node; the
// pointers are found only when it is set.
let sawNul = false;

/**
 * A copy of a parsed body (plain objects, arrays, scalars), refusing one nested deeper than MAX_BODY_DEPTH
 * before walking further (so the recursion is bounded), and noting a NUL in any string or key. One walk for
 * all: structuredClone plus a separate depth walk cost ~5 µs per request.
 */
function copyBody(v: unknown, depth = 1): unknown {
  if (v === null || typeof v !== "object") {
    if (typeof v === "string" && v.includes("\0")) sawNul = true;
    return v;
  }
  if (depth > MAX_BODY_DEPTH) throw TOO_DEEP;
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = copyBody(v[i], depth + 1);
    return out;
  }
  const out: Record<string, unknown> = {};
  // (for…in, not Object.entries: no array per object. A parsed body's objects have no inherited keys.)
  for (const k in v) {
    if (!Object.hasOwn(v, k)) continue;
    const child = (v as Record<string, unknown>)[k];
    if (k.includes("\0")) sawNul = true;
    // NB! A JSON key "__proto__" is an own property of the parsed object; assigning it would set the prototype.
    if (k === "__proto__") Object.defineProperty(out, k, { value: copyBody(child, depth + 1), enumerable: true, writable: true, configurable: true });
    else out[k] = copyBody(child, depth + 1);
  }
  return out;
}

/** Storage errors after which a write may or may not have been kept. */
const UNKNOWN_OUTCOME = new Set(["SQLITE_IOERR_FSYNC", "08006"]);

/**
 * A database error that says the storage cannot serve now (not that the request is wrong): why, in words, and
 * when to retry. SQLite's result codes; PostgreSQL's SQLSTATEs — the server gone or restarting (class 08,
 * 57P01-57P03), out of disk (53100) or other resources (53xxx), a lock or statement timeout (55P03, 57014),
 * a conflict the server aborted (40001, 40P01), a read-only server (25006, e.g. a standby), an I/O error (58030).
 */
function storageUnavailable(code: unknown): { why: string; retryAfter: string } | null {
  if (typeof code !== "string") return null;
  const busy = { why: "the database is busy", retryAfter: "1" };
  if (code.startsWith("SQLITE_")) {
    if (!/^SQLITE_(FULL|READONLY|IOERR|CANTOPEN|BUSY|LOCKED)/.test(code)) return null;
    if (code.startsWith("SQLITE_FULL")) return { why: "the disk is full", retryAfter: "30" };
    if (code.startsWith("SQLITE_READONLY")) return { why: "the database is read-only", retryAfter: "30" };
    if (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED")) return busy;
    return { why: "the database had an I/O error", retryAfter: "30" };
  }
  if (code.length !== 5) return null;
  if (code === "53100") return { why: "the disk is full", retryAfter: "30" };
  if (code === "25006") return { why: "the database is read-only", retryAfter: "30" };
  if (code === "58030") return { why: "the database had an I/O error", retryAfter: "30" };
  if (code.startsWith("08") || code === "57P01" || code === "57P02" || code === "57P03") return { why: "the database cannot be reached", retryAfter: "5" };
  if (code.startsWith("53") || code === "55P03" || code === "57014" || code === "40001" || code === "40P01") return busy;
  return null;
}

export function errorPlugin({ log }: { log: Logger }) {
  return (
    new Elysia({ name: "errors" })
      // NB! Elysia coerces the body in place while validating (defaults, "x" → [{}]); keep what the client
      // sent so a failure is reported at the field the client got wrong.
      .onTransform(({ request, body, query, params }) => {
        // The URL is cheap to check (a few short values); %00 is the only way a NUL gets into it.
        if (request.url.includes("%00")) {
          const nul = nulInUrl(query as Record<string, unknown>, params as Record<string, unknown>);
          if (nul.length) throw new AppError("VALIDATION_FAILED", "The request holds a NUL character", nul);
        }
        if (body === null || typeof body !== "object" || body instanceof FormData || body instanceof Blob) return;
        // A body nested thousands deep overflowed the validator (500): refuse it before anything walks it.
        let copy: unknown;
        sawNul = false;
        try {
          copy = copyBody(body);
        } catch (e) {
          if (e !== TOO_DEEP) throw e;
          throw new AppError("VALIDATION_FAILED", "The request body is nested too deeply", [
            { pointer: "/", message: `nested deeper than ${MAX_BODY_DEPTH} levels` },
          ]);
        }
        if (sawNul) throw new AppError("VALIDATION_FAILED", "The request holds a NUL character", nulPointers(copy));
        sentBodies.set(request, copy);
      })
      .onError(({ code, error, request, set }) => {
        const requestId = requestFacts(request)?.requestId;
        const headers = { ...(set.headers as Record<string, string>) };
        // NB! Also on `set`: the access log and metrics read the status there, and a Response built here
        // is not always what they see (unmatched routes).
        const json = (status: number, body: unknown, extra: Record<string, string> = {}) => {
          set.status = status;
          return jsonResponse(status, body, extra);
        };
        if (error instanceof AppError) {
          return json(error.status, errorBody(requestId, error.code, error.message, error.details), { ...headers, ...error.headers });
        }
        switch (code) {
          case "VALIDATION":
            return json(
              422,
              errorBody(requestId, "VALIDATION_FAILED", "The request is invalid", validationDetails(error as ValidationError, sentBodies.get(request))),
              headers,
            );
          case "PARSE":
            return json(
              422,
              errorBody(requestId, "VALIDATION_FAILED", "The request body is not valid JSON", [{ pointer: "/", message: "malformed JSON" }]),
              headers,
            );
          case "NOT_FOUND":
            return json(404, errorBody(requestId, "NOT_FOUND", "No such route"), headers);
          case "INVALID_COOKIE_SIGNATURE":
          case "INVALID_FILE_TYPE":
            return json(422, errorBody(requestId, "VALIDATION_FAILED", "The request is invalid"), headers);
        }
        // The database cannot take the write (a full disk, a read-only file or mount, an I/O error) or is held
        // by another process: 503 with Retry-After — the transaction rolled back, nothing was stored, and the
        // same request succeeds once the operator freed space.
        const unavailable = storageUnavailable((error as { code?: unknown }).code);
        if (unavailable) {
          log.error({ requestId, err: error, path: pathOf(request) }, "database unavailable");
          // NB! A failed fsync of a group commit (src/db/wal-sync.ts walSync), or a PostgreSQL connection lost
          // mid-request (possibly during COMMIT): the write may or may not last — not "nothing was changed".
          const read = request.method === "GET" || request.method === "HEAD";
          const outcome = read
            ? "retry later"
            : UNKNOWN_OUTCOME.has((error as { code: string }).code)
              ? "it may or may not have been kept; retry with the same Idempotency-Key"
              : "nothing was changed. Retry later";
          const message = `The request could not be ${read ? "served" : "stored"}: ${unavailable.why}; ${outcome}.`;
          return json(503, errorBody(requestId, "STORAGE_UNAVAILABLE", message), {
            ...headers,
            "retry-after": unavailable.retryAfter,
          });
        }
        log.error({ requestId, err: error, path: pathOf(request) }, "unhandled error");
        return json(500, errorBody(requestId, "INTERNAL", "Internal server error"), headers);
      })
      .as("global")
  );
}
