/**
 * "No input of any shape produces a 500": every operation of our own OpenAPI document gets hostile bodies,
 * path values and query strings. Every answer must be a client error (4xx) or a success, never 5xx, and
 * always in the error envelope when it is an error.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
let operations: { method: string; path: string }[] = [];
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 1e9, burst: 1e9 } } });
  const spec = (await app.request("GET", "/openapi.json", { key: null })).body;
  for (const [path, ops] of Object.entries(spec.paths as Record<string, Record<string, unknown>>))
    for (const method of Object.keys(ops)) if (["get", "post", "patch", "put", "delete"].includes(method)) operations.push({ method: method.toUpperCase(), path });
});
afterAll(() => app.close());

const bodies: (string | undefined)[] = [
  undefined,
  "",
  "null",
  "[]",
  '"text"',
  "12345678901234567890",
  "{",
  '{"__proto__": {"polluted": true}}',
  JSON.stringify({ channel: {}, to: [], type: 1, identities: "x", events: [null], url: 5, text: { a: 1 }, metadata: [1, 2] }),
  JSON.stringify({ identities: [{ channel: "whatsapp", value: "\u0000" }], customFields: { "": null }, tags: [[]] }),
  JSON.stringify(Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`k${i}`, "x".repeat(100)]))),
  "x".repeat(100_000),
];
const pathValues = ["nope", "0193a4b2-0000-7000-8000-00000000ffff", "%00", "..%2F..%2Fetc%2Fpasswd", "x".repeat(2000), "'; DROP TABLE contacts; --"];
const queries = ["", "?limit=-1", "?limit=abc&cursor=%%%", "?cursor=eyJ4Ijox", "?tag=&tag=&tagMatch=nope&createdAfter=yesterday&status=[]"];

test("every operation answers hostile input without a 5xx", async () => {
  expect(operations.length).toBeGreaterThan(40);
  const failures: string[] = [];
  const seen: Record<number, number> = {};
  for (const op of operations) {
    for (const value of pathValues) {
      const path = op.path.replace(/\{[^}]+\}/g, encodeURIComponent(value)).replace(/^\/api\/public\/v1/, "");
      for (const q of queries) {
        for (const body of op.method === "GET" || op.method === "DELETE" ? [undefined] : bodies) {
          const res = await app.request(op.method, `${path}${q}`, { raw: body, headers: body !== undefined ? { "content-type": "application/json" } : {} });
          seen[res.status] = (seen[res.status] ?? 0) + 1;
          if (res.status >= 500 || (res.status >= 400 && !res.body?.error?.code)) failures.push(`${op.method} ${path}${q} body=${String(body).slice(0, 40)} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        }
        if (!op.path.includes("{")) break; // path values only matter for templated paths
      }
      if (!op.path.includes("{")) break;
    }
  }
  // The inputs must reach validation and the handlers, not stop at the guard.
  expect(seen[429] ?? 0).toBe(0);
  expect(seen[422] ?? 0).toBeGreaterThan(1000);
  expect(failures.slice(0, 10)).toEqual([]);
}, 120_000);
