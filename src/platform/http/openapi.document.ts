/**
 * The OpenAPI document's post-processing (`finishDocument`); served by openapi.ts, its `webhooks` section from
 * openapi.webhooks.ts.
 *
 * Elysia's generator (`toOpenAPISchema`) turns every route's TypeBox schemas into a document; `finishDocument`
 * below post-processes it into what integrators generate clients from (DESIGN §14). A module is covered by
 * following these conventions — nothing here names a module:
 *   1. Wrap each resource schema (and each request body worth a name) in `named("Thing", t.Object(…))`
 *      (src/platform/http/schemas.ts). Every schema carrying a PascalCase `title` is hoisted into
 *      `components/schemas/<title>` and replaced by a `$ref`; two different schemas with one title throw.
 *   2. Use `t.Union([t.Literal(…), …])` for closed sets (they become `enum`); `t.Integer()` for counts
 *      (Elysia's `anyOf [string, integer]` coercion artefact is collapsed to `integer`).
 *   3. Give each route `scope` (the guard's macro; it becomes the operation's bearer scope) and `detail`
 *      with `summary`, `description` and `operationId`. Declare errors with `errors(…)` from envelope.ts and
 *      list the operation's 422 rule codes (beyond VALIDATION_FAILED) and other codes in
 *      `detail["x-error-codes"]`, e.g. `["MESSAGING_WINDOW_CLOSED", "CONTACT_BLOCKED"]`.
 *   4. Anything TypeBox cannot say (a binary response, a streamed request body, examples) goes in
 *      `detail["x-openapi"]`: a partial operation object merged over the generated one.
 *   5. A string field documented as something else (e.g. a query `limit` parsed by hand) carries
 *      `"x-openapi-schema": { type: "integer", … }`, which replaces it in the document.
 * Request headers (X-Request-Id, Idempotency-Key on POST/PATCH/PUT), response headers (X-Request-Id, RateLimit,
 * RateLimit-Policy, Idempotent-Replayed, Retry-After), the 401/429/500 responses (503 STORAGE_UNAVAILABLE on
 * operations that write) and the two key schemes (bearer, X-API-Key) are added to every operation under the
 * API prefix. The `webhooks` section is built from the event catalogue it is handed (`eventTypes`).
 */
import { ERROR_STATUS, type ErrorCode } from "../errors";
import { API_PREFIX } from "./api-guard.plugin";
import type { EventTypeInfo } from "../events/events";
import { eventWebhooks } from "./openapi.webhooks";

export type Json = any;

const HEADERS: Record<string, Json> = {
  "X-Request-Id": { description: "The request's id (echoed when the client sent a valid one); in every log line.", schema: { type: "string" } },
  RateLimit: { description: 'Remaining requests of the key\'s budget, e.g. `"default";r=49;t=1` (IETF RateLimit fields).', schema: { type: "string" } },
  "RateLimit-Policy": { description: 'The key\'s rate-limit policy, e.g. `"default";q=50;w=1`.', schema: { type: "string" } },
  "Idempotent-Replayed": {
    description: "`true` when this response is the stored reply to an earlier request with the same Idempotency-Key.",
    schema: { type: "string", enum: ["true"] },
  },
  "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 0 } },
};

const PARAMETERS: Record<string, Json> = {
  XRequestId: {
    name: "X-Request-Id",
    in: "header",
    required: false,
    description: "Your id for this request (8-100 of `A-Z a-z 0-9 . _ : -`); generated when absent, 422 when malformed.",
    schema: { type: "string", pattern: "^[A-Za-z0-9._:-]{8,100}$" },
  },
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header",
    required: false,
    description:
      "Makes a retry safe: the same key with the same body within 24 h replays the first 2xx response (with `Idempotent-Replayed: true`); with a different body 409 IDEMPOTENCY_CONFLICT.",
    schema: { type: "string", minLength: 1, maxLength: 255 },
  },
};

/** Codes every authenticated operation can return, by status. */
const COMMON_CODES: Record<number, ErrorCode[]> = {
  401: ["API_KEY_INVALID", "API_KEY_REVOKED", "API_KEY_EXPIRED"],
  403: ["API_SCOPE_MISSING", "IP_NOT_ALLOWED"],
  404: ["NOT_FOUND"],
  422: ["VALIDATION_FAILED"],
  429: ["RATE_LIMITED"],
  500: ["INTERNAL"],
  502: ["PROVIDER_ERROR"],
  402: ["INSUFFICIENT_BALANCE"],
};
const LICENSE_CODES: ErrorCode[] = ["FEATURE_NOT_LICENSED", "LICENSE_EXPIRED", "LICENSE_NOT_FOUND"];

const STATUS_TEXT: Record<number, string> = {
  400: "Bad request",
  401: "Missing, unknown, revoked or expired API key",
  402: "The company's balance cannot pay for it",
  403: "The key lacks the scope, the address is not allowed, or the feature is not licensed",
  404: "No such resource (or it belongs to another company)",
  405: "Method not allowed on this path",
  409: "Conflicts with the resource's state or an earlier Idempotency-Key",
  422: "Invalid request: `details` names each offending field by pointer",
  429: "Rate limit exceeded: wait `Retry-After` seconds",
  500: "Unexpected server error (logged with the request id)",
  502: "The channel provider failed",
  503: "The database cannot take the write now (nothing was stored): retry after `Retry-After` seconds",
};

const WRITES = ["post", "put", "patch", "delete"];

const isObj = (x: unknown): x is Record<string, Json> => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * `x-openapi` over the generated operation: objects merge key by key, except that a `schema` replaces the
 * generated one and a `content` naming none of the generated media types replaces them all.
 */
function deepMerge(target: Json, patch: Json, key = ""): Json {
  if (!isObj(target) || !isObj(patch) || key === "schema") return patch;
  if (key === "content" && !Object.keys(patch).some((k) => k in target)) return patch;
  const out = { ...target };
  for (const [k, v] of Object.entries(patch)) out[k] = k in out ? deepMerge(out[k], v, k) : v;
  return out;
}

const stable = (x: unknown): string =>
  JSON.stringify(x, (_k, v) =>
    isObj(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );

/** Rewrites one JSON Schema (recursively): hints, integer coercion artefacts, invented defaults, named schemas. */
function schemaFixer(components: Record<string, Json>, inResponse: boolean) {
  const fix = (s: Json): Json => {
    if (Array.isArray(s)) return s.map(fix);
    if (!isObj(s)) return s;
    if (s["x-openapi-schema"]) {
      const { "x-openapi-schema": hint, ...rest } = s;
      return fix({ ...hint, ...(rest.description ? { description: rest.description } : {}) });
    }
    let out: Json = {};
    for (const [k, v] of Object.entries(s)) {
      if (k === "$id") continue;
      if (k === "properties" || k === "patternProperties" || k === "$defs")
        out[k] = Object.fromEntries(Object.entries(v as Json).map(([pk, pv]) => [pk, fix(pv)]));
      else if (k === "examples" || k === "example" || k === "enum" || k === "const" || k === "required") out[k] = v;
      else out[k] = fix(v);
    }
    // Elysia's coercion: anyOf [{type: string, format: integer|number|boolean}, {type: integer…}] → the real type.
    if (Array.isArray(out.anyOf)) {
      const coerced = out.anyOf.filter((b: Json) => !(isObj(b) && b.type === "string" && ["integer", "number", "boolean", "numeric"].includes(b.format)));
      if (coerced.length === 1 && coerced.length < out.anyOf.length) {
        const { anyOf: _drop, ...rest } = out;
        out = { ...coerced[0], ...rest };
      }
    }
    // `t.Union([t.UnionEnum([…]), t.Null()])` arrives as `type: [string, null]` with an enum that lacks null,
    // which refuses the null the type allows.
    if (Array.isArray(out.type) && out.type.includes("null") && Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    // Defaults Elysia invents (first enum value, 0 for counts, "File" for uploads) mislead; responses have none.
    if ("default" in out) {
      const invented =
        inResponse ||
        (Array.isArray(out.enum) && out.enum.length > 1 && out.default === out.enum[0] && !out["x-default"]) ||
        out.format === "binary" ||
        isObj(out.default);
      if (invented) delete out.default;
    }
    delete out["x-default"];
    if (typeof out.title === "string" && /^[A-Z][A-Za-z0-9]*$/.test(out.title)) {
      const name = out.title;
      // `t.Union([Named, t.Null()])` arrives as `type: [object, null]`: publish the non-null schema.
      const nullable = Array.isArray(out.type) && out.type.includes("null");
      if (nullable) {
        const rest = out.type.filter((x: string) => x !== "null");
        out.type = rest.length === 1 ? rest[0] : rest;
      }
      const { description, ...body } = out;
      const prev = components[name];
      if (prev) {
        const { description: _d, ...prevBody } = prev;
        if (stable(prevBody) !== stable(body)) throw new Error(`OpenAPI: two different schemas are named ${name}: ${stable(prevBody)} vs ${stable(body)}`);
      } else components[name] = out;
      const ref: Json = { $ref: `#/components/schemas/${name}` };
      if (description && description !== components[name].description) ref.description = description;
      return nullable ? { anyOf: [ref, { type: "null" }] } : ref;
    }
    return out;
  };
  return fix;
}

/** What the guard's macros (`scope`, `license`) leave in the route's detail. */
interface RouteFacts {
  scope?: string;
  license?: string;
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** The generated document → the published one (see the conventions at the top of this file). */
export function finishDocument(
  raw: Json,
  info: { title: string; version: string; description: string; serverUrl: string; eventTypes: readonly EventTypeInfo[] },
): Json {
  const schemas: Record<string, Json> = {};
  const errorSchema = {
    type: "object",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "message", "requestId", "details"],
        properties: {
          code: {
            type: "string",
            enum: Object.keys(ERROR_STATUS),
            description: "UPPER_SNAKE error code; the operation's response lists the codes it can return",
          },
          message: { type: "string", description: "plain-language explanation" },
          requestId: { type: ["string", "null"], description: "the request's X-Request-Id" },
          details: {
            type: "array",
            description: "one entry per offending field",
            items: {
              title: "ErrorDetail",
              type: "object",
              required: ["pointer", "message"],
              properties: {
                pointer: { type: "string", description: "JSON Pointer into the body (`/to/phone`), or `query:name`, `header:Name`, `path:name`" },
                message: { type: "string" },
              },
            },
          },
        },
      },
    },
    title: "Error",
  };
  const fixResp = schemaFixer(schemas, true);
  const fixReq = schemaFixer(schemas, false);
  fixResp(errorSchema);

  const paths: Record<string, Json> = {};
  for (const [path, item] of Object.entries<Json>(raw.paths ?? {})) {
    const inApi = path.startsWith(API_PREFIX + "/");
    const outItem: Json = {};
    for (const [method, op0] of Object.entries<Json>(item)) {
      if (!METHODS.includes(method)) {
        outItem[method] = op0;
        continue;
      }
      const { "x-openapi": patch, "x-error-codes": extraCodes = [], "x-scope": scope, "x-license": license, ...op } = op0 as Json;
      const facts: RouteFacts = { scope, license };
      // Request bodies: JSON only (the API parses nothing else); the form variants Elysia lists are refused.
      if (op.requestBody?.content) {
        const c = op.requestBody.content;
        const keep = c["application/json"] ? { "application/json": c["application/json"] } : c;
        op.requestBody = {
          ...op.requestBody,
          content: Object.fromEntries(Object.entries<Json>(keep).map(([ct, m]) => [ct, { ...m, schema: fixReq(m.schema) }])),
        };
      }
      op.parameters = (op.parameters ?? []).map((p: Json) => ({ ...p, schema: fixReq(p.schema) }));
      if (inApi) {
        op.parameters.push({ $ref: "#/components/parameters/XRequestId" });
        if (method === "post" || method === "patch" || method === "put") op.parameters.push({ $ref: "#/components/parameters/IdempotencyKey" });
      }
      if (!op.parameters.length) delete op.parameters;

      // Responses: named schemas, headers, and the error codes per status.
      const responses: Json = {};
      const statuses = new Set(Object.keys(op.responses ?? {}).map(Number));
      // Every API operation authenticates, rate-limits and checks X-Request-Id.
      if (inApi && facts.scope) for (const s of [401, 403, 422, 429, 500]) statuses.add(s);
      const codes = new Map<number, Set<string>>();
      const addCode = (c: string) => {
        const st = ERROR_STATUS[c as ErrorCode];
        if (!st) throw new Error(`OpenAPI: unknown error code ${c} on ${method.toUpperCase()} ${path}`);
        statuses.add(st);
        (codes.get(st) ?? codes.set(st, new Set()).get(st)!).add(c);
      };
      for (const c of extraCodes as string[]) addCode(c);
      if (inApi && facts.scope && (method === "post" || method === "patch" || method === "put")) addCode("IDEMPOTENCY_CONFLICT");
      // Every write can meet a full disk, a read-only file or a lost PostgreSQL (error.plugin.ts).
      if (inApi && facts.scope && WRITES.includes(method)) addCode("STORAGE_UNAVAILABLE");
      if (facts.license) for (const c of LICENSE_CODES) addCode(c);
      for (const status of [...statuses].sort()) {
        const given = op.responses?.[String(status)];
        const headers: Json = {};
        if (inApi) headers["X-Request-Id"] = { $ref: "#/components/headers/X-Request-Id" };
        if (inApi && facts.scope && status !== 401) {
          headers.RateLimit = { $ref: "#/components/headers/RateLimit" };
          headers["RateLimit-Policy"] = { $ref: "#/components/headers/RateLimit-Policy" };
        }
        if (status === 429 || status === 503) headers["Retry-After"] = { $ref: "#/components/headers/Retry-After" };
        if (status >= 400) {
          const set = new Set([...(COMMON_CODES[status] ?? []), ...(codes.get(status) ?? [])]);
          // A status declared without codes: every code of that status.
          const list = set.size ? [...set] : Object.keys(ERROR_STATUS).filter((c) => ERROR_STATUS[c as ErrorCode] === status);
          responses[String(status)] = {
            description: `${STATUS_TEXT[status] ?? "Error"}. Codes: ${list.join(", ")}.`,
            headers,
            content: {
              "application/json": {
                schema: {
                  allOf: [
                    { $ref: "#/components/schemas/Error" },
                    { type: "object", properties: { error: { type: "object", properties: { code: { type: "string", enum: list } } } } },
                  ],
                },
              },
            },
          };
          continue;
        }
        if ((method === "post" || method === "patch" || method === "put") && inApi)
          headers["Idempotent-Replayed"] = { $ref: "#/components/headers/Idempotent-Replayed" };
        const out: Json = {
          description: given?.description && !/^Response for status/.test(given.description) ? given.description : status === 204 ? "No content" : "Success",
          headers,
        };
        if (given?.content && status !== 204)
          out.content = Object.fromEntries(Object.entries<Json>(given.content).map(([ct, m]) => [ct, { ...m, schema: fixResp(m.schema) }]));
        responses[String(status)] = out;
      }
      if (!Object.keys(responses).length) responses["200"] = { description: "Success" };
      op.responses = responses;

      if (inApi && facts.scope) {
        const scopes = facts.scope === "any" ? [] : [facts.scope];
        op.security = [{ bearer: scopes }, { apiKey: scopes }];
        const needs = facts.scope === "any" ? "Any valid API key." : `Requires the scope \`${facts.scope}\`.`;
        op.description = `${op.description ?? op.summary ?? ""}\n\n${needs}${facts.license ? ` Licensed feature: \`${facts.license}\`.` : ""}`.trim();
      } else {
        op.security = [];
        op.description ??= op.summary ?? "";
      }
      outItem[method] = patch ? deepMerge(op, patch) : op;
    }
    paths[path] = outItem;
  }
  paths[`${API_PREFIX}/openapi.json`] = {
    get: {
      tags: ["Meta"],
      summary: "This OpenAPI 3.1 document",
      description: "The API's description, for client generators. Needs no key.",
      operationId: "getOpenApiDocument",
      security: [],
      responses: {
        "200": { description: "The document", content: { "application/json": { schema: { type: "object", additionalProperties: true } } } },
        "405": {
          description: `${STATUS_TEXT[405]}; \`Allow\` lists the methods.`,
          headers: { Allow: { description: "the path's methods", schema: { type: "string" } } },
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
    },
  };

  const webhooks = eventWebhooks(schemas, info.eventTypes);
  const tags = [...new Set([...Object.values(paths), ...Object.values(webhooks)].flatMap((i: Json) => Object.values<Json>(i).flatMap((o) => o.tags ?? [])))]
    .sort()
    .map((name) => ({ name, description: `${name} operations` }));
  return {
    openapi: "3.1.0",
    info: { title: info.title, version: info.version, description: info.description, license: { name: "Proprietary", identifier: "LicenseRef-Switchboard" } },
    servers: [{ url: info.serverUrl, description: "This appliance (server.public_url)" }],
    security: [{ bearer: [] }, { apiKey: [] }],
    tags,
    paths,
    webhooks,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))),
      parameters: PARAMETERS,
      headers: HEADERS,
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "An API key (`sb_live_…`) in `Authorization: Bearer <key>`. Its scopes decide which operations it may call.",
        },
        apiKey: {
          type: "apiKey",
          in: "header",
          name: "X-API-Key",
          description: "The same API key in `X-API-Key: <key>` (for clients that cannot set Authorization). Send one of the two.",
        },
      },
    },
  };
}
