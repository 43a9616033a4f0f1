/**
 * The one order of checks docs/api.md ("Order of checks") writes, request by request (issue 41, item 11): each
 * row breaks two rules at once and names the one that must answer. A row per neighbouring pair of the order, so
 * a change of the order fails here and in nothing else. Licensed routes: /records (module pipeline).
 *
 *   routing 404/405 → X-Request-Id 422 → key 401 → IP allow-list 403 → rate limit 429 → body not readable 422
 *   (malformed JSON, NUL, nested too deep) → scope 403 → license 403 → schema 422 → Idempotency-Key 409 →
 *   the operation's own rules (404, 409, 422 rule codes, 402)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { signLicense } from "../../../scripts/sign-license";
import { rowsOf, runScenarios } from "../../../test/helpers/scenarios";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
const keys = { readOnly: "", pipelineWriter: "", farAway: "", slow: "" };
const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");
const license = (modules: string[]) =>
  writeFileSync(app.config.license.file, signLicense({ company: "default", modules, expiresAt: "2099-01-01T00:00:00Z", privateKey: devKey }));

beforeAll(async () => {
  app = await createTestApp();
  keys.readOnly = (await app.newKey({ name: "ro", scopes: ["contacts:read"] })).key;
  keys.pipelineWriter = (await app.newKey({ name: "pw", scopes: ["pipeline:write", "contacts:write"] })).key;
  keys.farAway = (await app.newKey({ name: "ip", scopes: ["contacts:read"], allowedIps: ["10.9.9.9/32"] })).key;
  keys.slow = (await app.newKey({ name: "slow", scopes: ["contacts:read"], rateLimit: 1 })).key;
});
afterAll(() => app.close());

const json = { "content-type": "application/json" };
/** The app, with a scenario's `key` naming one of `keys` (scenarios are written before the keys exist). */
const withNamedKeys = () =>
  ({
    ...app,
    request: (m: string, u: string, o: any = {}) => app.request(m, u, { ...o, key: o.key && o.key in keys ? keys[o.key as keyof typeof keys] : o.key }),
  }) as TestApp;
const code = (c: string) => ({ error: { code: c } });

describe("without a license file", () => {
  runScenarios(withNamedKeys, [
    { name: "routing before the key: unknown path 404", method: "GET", url: "/nope", key: null, status: 404, contains: code("NOT_FOUND") },
    { name: "routing before the key: wrong method 405", method: "PUT", url: "/contacts", key: null, status: 405, contains: code("METHOD_NOT_ALLOWED") },
    {
      name: "X-Request-Id before the key",
      method: "GET",
      url: "/contacts",
      key: null,
      headers: { "x-request-id": "bad id!" },
      status: 422,
      contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "header:X-Request-Id" }] } },
    },
    ...rowsOf("POST", "/contacts", [
      {
        name: "key before the body: 401, not 422",
        key: null,
        raw: "{bad",
        headers: json,
        status: 401,
        contains: code("API_KEY_INVALID"),
      },
      {
        name: "IP allow-list before the body and the scope",
        key: "farAway",
        raw: "{bad",
        headers: json,
        status: 403,
        contains: code("IP_NOT_ALLOWED"),
      },
      {
        name: "a body that cannot be read (malformed JSON) before the scope",
        key: "readOnly",
        raw: "{bad",
        headers: json,
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/", message: "malformed JSON" }] } },
      },
      {
        name: "a body that cannot be read (NUL) before the scope",
        key: "readOnly",
        body: { firstName: "a\u0000" },
        status: 422,
        contains: { error: { details: [{ pointer: "/firstName" }] } },
      },
      {
        name: "scope before the schema: 403, never the operation's 422",
        key: "readOnly",
        body: { identities: "x" },
        status: 403,
        contains: code("API_SCOPE_MISSING"),
      },
    ]),
    {
      name: "scope before the license",
      method: "POST",
      url: "/records",
      key: "readOnly",
      body: { title: "x" },
      status: 403,
      contains: code("API_SCOPE_MISSING"),
    },
    {
      name: "license before the schema",
      method: "POST",
      url: "/records",
      key: "pipelineWriter",
      body: { nope: 1 },
      status: 403,
      contains: code("LICENSE_NOT_FOUND"),
    },
  ]);

  test("rate limit before the body and the scope", async () => {
    for (let i = 0; i < 3; i++) await app.request("GET", "/contacts", { key: keys.slow }); // spends its bucket (1 r/s, burst 2)
    const res = await app.request("POST", "/contacts", { key: keys.slow, raw: "{bad", headers: json });
    expect([res.status, res.body.error.code]).toEqual([429, "RATE_LIMITED"]);
  });
});

describe("with the license", () => {
  beforeAll(() => license(["pipeline", "sources"]));
  test("schema before the Idempotency-Key: a reused key with an invalid body is 422, not 409", async () => {
    const headers = { "idempotency-key": "order-1" };
    const first = await app.request("POST", "/contacts", {
      key: keys.pipelineWriter,
      headers,
      body: { identities: [{ channel: "email", value: "a@example.com" }] },
    });
    expect(first.status).toBe(201);
    const invalid = await app.request("POST", "/contacts", { key: keys.pipelineWriter, headers, body: { identities: "x" } });
    expect([invalid.status, invalid.body.error.details[0].pointer]).toEqual([422, "/identities"]);
    const other = await app.request("POST", "/contacts", {
      key: keys.pipelineWriter,
      headers,
      body: { identities: [{ channel: "email", value: "b@example.com" }] },
    });
    expect([other.status, other.body.error.code]).toEqual([409, "IDEMPOTENCY_CONFLICT"]);
  });
  test("license, then the schema (422), then the operation's own rules (404)", async () => {
    const invalid = await app.request("POST", "/records", { key: keys.pipelineWriter, body: { nope: 1 } });
    expect([invalid.status, invalid.body.error.code]).toEqual([422, "VALIDATION_FAILED"]);
    const unknown = await app.request("POST", "/records/0193a4b2-0000-7000-8000-00000000ffff/move", { key: keys.pipelineWriter, body: { stageId: "x" } });
    expect(unknown.status).toBe(404);
  });
});

test("docs/api.md writes this order once, in Conventions, and nowhere contradicts it", () => {
  const md = readFileSync(join(import.meta.dir, "../../../docs/api.md"), "utf8");
  const order = md.match(/Order of checks[^\n]*\n(?:[^\n]+\n)*/g) ?? [];
  expect(order.length).toBe(1);
  for (const step of ["404", "405", "X-Request-Id", "401", "IP_NOT_ALLOWED", "429", "malformed JSON", "API_SCOPE_MISSING", "LICENSE_", "409"])
    expect(order[0]).toContain(step);
  const at = (s: string) => order[0]!.indexOf(s);
  expect(at("401")).toBeLessThan(at("IP_NOT_ALLOWED"));
  expect(at("malformed JSON")).toBeLessThan(at("API_SCOPE_MISSING"));
  expect(at("API_SCOPE_MISSING")).toBeLessThan(at("LICENSE_"));
  expect(at("LICENSE_")).toBeLessThan(at("schema"));
  expect(at("schema")).toBeLessThan(at("409"));
  expect(md).not.toContain("the body and query\nschema (422), the scope (403");
});
