/**
 * Fuzz driven by the OpenAPI document: every operation gets seeded random bodies (random JSON of every type,
 * deep nesting, NUL bytes, invalid UTF-8, oversized bodies), random header values (Idempotency-Key,
 * X-Request-Id, Content-Type) and random query strings and path values. Every answer must be < 500, and
 * every error in the envelope. `FUZZ_CASES` cases per operation (CI: 12; `make fuzz`: 400), `FUZZ_SEED`.
 * Complements src/platform/http/no-500.test.ts (its fixed hostile inputs).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/test-app";

const CASES = Number(process.env.FUZZ_CASES ?? 12);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const PREFIX = "/api/public/v1";

/** mulberry32: a small seeded PRNG, so a failure can be replayed with its seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let app: TestApp;
const operations: { method: string; path: string; fields: string[] }[] = [];
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 1e9, burst: 1e9 } } });
  const spec = (await app.request("GET", "/openapi.json", { key: null })).body;
  for (const [path, ops] of Object.entries(spec.paths as Record<string, Record<string, any>>))
    for (const [method, op] of Object.entries(ops)) {
      if (!["get", "post", "patch", "put", "delete"].includes(method) || !path.startsWith(PREFIX)) continue;
      const schema = op.requestBody?.content?.["application/json"]?.schema;
      operations.push({ method: method.toUpperCase(), path: path.slice(PREFIX.length), fields: Object.keys(schema?.properties ?? {}) });
    }
});
afterAll(() => app.close());

test(`every operation × ${CASES} random cases: never a 5xx, every error in the envelope`, async () => {
  const rnd = prng(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const strings = ["", " ", "\u0000", "a\u0000b", "😀".repeat(50), "x".repeat(5000), "../../etc/passwd", "<script>", "${x}", "null", "+14155550101", "0193a4b2-0000-7000-8000-00000000ffff", "whatsapp", "\ud800"];
  const value = (depth: number): unknown => {
    const r = rnd();
    if (depth > 3 || r < 0.35) return pick([null, true, false, 0, -1, 1e308, -0.5, 2 ** 53 + 1, pick(strings)]);
    if (r < 0.6) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 5) }, () => [pick(["", "__proto__", "constructor", "a", "x".repeat(300)]), value(depth + 1)]));
  };
  const body = (fields: string[]): string | Uint8Array => {
    const r = rnd();
    if (r < 0.05) return new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22, 0x7d]); // {"a":"<invalid UTF-8>"}
    if (r < 0.1) {
      // Deep nesting, in arrays and objects, at the top and inside a field: 20,000 levels made a 500.
      const d = pick([100, 5000, 20_000]);
      return pick(["[".repeat(d) + "]".repeat(d), `{"${pick(fields.length ? fields : ["x"])}":${'{"a":'.repeat(d)}1${"}".repeat(d)}}`]);
    }
    if (r < 0.13) return JSON.stringify({ text: "x".repeat(3 * 1024 * 1024) }); // oversized
    if (r < 0.2) return pick(["", "{", "nul\u0000l", "{}", "[]"]);
    // The operation's own fields with random values: reaches validation of each field, and the handlers.
    const obj: Record<string, unknown> = {};
    for (const f of fields) if (rnd() < 0.7) obj[f] = value(1);
    return JSON.stringify(obj);
  };
  // A lone surrogate cannot be percent-encoded: send invalid UTF-8 bytes for it instead.
  const enc = (v: string) => {
    try {
      return encodeURIComponent(v);
    } catch {
      return "%ED%A0%80%FF";
    }
  };
  const failures: string[] = [];
  const statuses: Record<number, number> = {};
  let tried = 0;
  for (const op of operations) {
    for (let i = 0; i < CASES; i++) {
      const path = op.path.replace(/\{[^}]+\}/g, () => enc(pick(["nope", "0193a4b2-0000-7000-8000-00000000ffff", "%", "\u0000", "x".repeat(1000), "\ud800"])));
      const query = rnd() < 0.5 ? "" : `?${pick(["limit", "cursor", "status", "from", "channel", "q"])}=${enc(String(pick(strings)))}&limit=${pick(["0", "abc", "201", "1e3", "-1", "50"])}`;
      const headers: Record<string, string> = { "content-type": pick(["application/json", "application/json", "text/plain", "application/x-ndjson", "multipart/form-data; boundary=x"]) };
      if (rnd() < 0.3) headers["idempotency-key"] = pick(["", " ", "x".repeat(300), "ok-key-1", "ü"]);
      if (rnd() < 0.3) headers["x-request-id"] = pick(["", "x".repeat(500), "id with spaces", "ok-1"]);
      const b = op.method === "GET" || op.method === "DELETE" ? undefined : body(op.fields);
      const res = await app.app.handle(
        new Request(`http://localhost${PREFIX}${path}${query}`, { method: op.method, headers: { authorization: `Bearer ${app.key}`, ...headers }, body: b }),
      );
      tried++;
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      const text = await res.text();
      let envelope = false;
      try {
        envelope = typeof JSON.parse(text)?.error?.code === "string";
      } catch {}
      if (res.status >= 500 || (res.status >= 400 && !envelope))
        failures.push(`${op.method} ${path}${query} ${JSON.stringify(headers)} body=${typeof b === "string" ? b.slice(0, 80) : b} (seed ${SEED}, case ${i}) → ${res.status} ${text.slice(0, 120)}`);
    }
  }
  console.log(`fuzz: ${operations.length} operations × ${CASES} cases = ${tried} requests, statuses ${JSON.stringify(statuses)}`);
  expect(statuses[429] ?? 0).toBe(0);
  expect(failures.slice(0, 10)).toEqual([]);
}, 600_000);
