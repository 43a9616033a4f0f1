/**
 * Fuzz driven by the OpenAPI document: every operation gets seeded random bodies (random JSON of every type,
 * deep nesting, NUL bytes, invalid UTF-8, oversized bodies), random header values (Idempotency-Key,
 * X-Request-Id, Content-Type) and random query strings and path values. Every answer must be < 500, and
 * every error in the envelope. `FUZZ_CASES` cases per operation (CI: 12; `make fuzz`: 400), `FUZZ_SEED`.
 * Complements src/platform/http/no-500.test.ts (its fixed hostile inputs).
 *
 * Second test: every URL-valued field of the document's request bodies is pointed at a loopback listener
 * (directly, in every spelling, and through an allowed redirector), the job queue drained, and the listener
 * must have counted 0 requests (DESIGN §23).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SmtpPeer } from "../fakes/smtp.peer";
import { XFake } from "../fakes/x.fake";
import { ensureHelloWorld } from "../../src/modules/templates/templates.service";
import { inbound } from "../helpers/messaging";
import { createTestApp, sandboxChannels, type TestApp } from "../helpers/test-app";

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
  const strings = [
    "",
    " ",
    "\u0000",
    "a\u0000b",
    "😀".repeat(50),
    "x".repeat(5000),
    "../../etc/passwd",
    "<script>", // biome-ignore lint/suspicious/noTemplateCurlyInString: a template-looking string is one of the hostile inputs
    "${x}",
    "null",
    "+14155550101",
    "0193a4b2-0000-7000-8000-00000000ffff",
    "whatsapp",
    "\ud800",
  ];
  const value = (depth: number): unknown => {
    const r = rnd();
    if (depth > 3 || r < 0.35) return pick([null, true, false, 0, -1, 1e308, -0.5, 2 ** 53 + 1, pick(strings)]);
    if (r < 0.6) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    return Object.fromEntries(
      Array.from({ length: Math.floor(rnd() * 5) }, () => [pick(["", "__proto__", "constructor", "a", "x".repeat(300)]), value(depth + 1)]),
    );
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
      const query =
        rnd() < 0.5
          ? ""
          : `?${pick(["limit", "cursor", "status", "from", "channel", "q"])}=${enc(String(pick(strings)))}&limit=${pick(["0", "abc", "201", "1e3", "-1", "50"])}`;
      const headers: Record<string, string> = {
        "content-type": pick(["application/json", "application/json", "text/plain", "application/x-ndjson", "multipart/form-data; boundary=x"]),
      };
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
        failures.push(
          `${op.method} ${path}${query} ${JSON.stringify(headers)} body=${typeof b === "string" ? b.slice(0, 80) : b} (seed ${SEED}, case ${i}) → ${res.status} ${text.slice(0, 120)}`,
        );
    }
  }
  console.log(`fuzz: ${operations.length} operations × ${CASES} cases = ${tried} requests, statuses ${JSON.stringify(statuses)}`);
  expect(statuses[429] ?? 0).toBe(0);
  expect(failures.slice(0, 10)).toEqual([]);
}, 600_000);

describe("URL-valued fields never reach loopback", () => {
  const SMTP_ID = "0193a4b2-0000-7000-8000-0000000000c1";
  const X_SOCIAL_ID = "0193a4b2-0000-7000-8000-0000000000c2";
  let urlApp: TestApp;
  let smtp: SmtpPeer;
  let xf: XFake;
  let hits = 0;
  let redirected = 0;
  // The "internal service": answers every request with a valid image, so only a refusal keeps the count at 0.
  const internal = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => (hits++, new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), { headers: { "content-type": "image/png" } })),
  });
  // A first hop `[outbound] allow` lets through (127.0.0.2/32), redirecting to `?to=`.
  const redirector = Bun.serve({
    hostname: "127.0.0.2",
    port: 0,
    fetch: (req) => (redirected++, new Response(null, { status: 302, headers: { location: new URL(req.url).searchParams.get("to") ?? "/" } })),
  });

  beforeAll(async () => {
    smtp = await SmtpPeer.start();
    xf = XFake.start({ userId: "1000000001" });
    urlApp = await createTestApp({
      config: {
        rate_limit: { requests_per_second: 1e9, burst: 1e9 },
        outbound: { allow: ["127.0.0.2/32"] },
        webhooks: { allow_private_networks: false },
        channels: [
          ...sandboxChannels(),
          {
            id: SMTP_ID,
            channel: "email",
            provider: "smtp",
            name: "smtp",
            default: false,
            settings: { host: "127.0.0.1", port: smtp.port, secure: false, from: "shop@shop.example" },
          },
        ],
        social_accounts: [
          { id: X_SOCIAL_ID, platform: "x", provider: "x", name: "X", settings: { user_id: "1000000001", access_token: "x-token", base_url: xf.url } },
        ],
      },
    });
    await ensureHelloWorld({ db: urlApp.deps.db, now: urlApp.deps.now, companyId: urlApp.company.id, account: { id: SMTP_ID, channel: "email" } });
    await inbound(urlApp, "whatsapp", { phone: "+14155550101" }, "hi", 60_000);
  });
  afterAll(async () => {
    await urlApp.close();
    await Promise.all([smtp.stop(), xf.stop()]);
    internal.stop(true);
    redirector.stop(true);
  });

  /** Every URL-valued request-body field of the document: `METHOD path pointer` (array items as /0). */
  function urlFields(spec: any): string[] {
    const found = new Set<string>();
    const walk = (s: any, ptr: string, op: string, depth: number): void => {
      if (!s || typeof s !== "object" || depth > 12) return;
      if (s.$ref) return walk(spec.components?.schemas?.[s.$ref.split("/").pop()], ptr, op, depth + 1);
      for (const k of ["anyOf", "oneOf", "allOf"]) for (const x of s[k] ?? []) walk(x, ptr, op, depth + 1);
      if (s.items) walk(s.items, `${ptr}/0`, op, depth + 1);
      if (s.additionalProperties && typeof s.additionalProperties === "object") walk(s.additionalProperties, `${ptr}/*`, op, depth + 1);
      for (const [k, v] of Object.entries<any>(s.properties ?? {})) {
        if (/url$/i.test(k) || v?.format === "uri") found.add(`${op} ${ptr}/${k}`);
        walk(v, `${ptr}/${k}`, op, depth + 1);
      }
    };
    for (const [path, ops] of Object.entries<any>(spec.paths))
      for (const [method, op] of Object.entries<any>(ops)) {
        const schema = op?.requestBody?.content?.["application/json"]?.schema;
        if (schema && path.startsWith(PREFIX)) walk(schema, "", `${method.toUpperCase()} ${path.slice(PREFIX.length)}`, 0);
      }
    return [...found].sort();
  }

  test("every URL field × every loopback spelling, direct and redirected: 0 hits after the queue drained", async () => {
    const spec = (await urlApp.request("GET", "/openapi.json", { key: null })).body;
    const port = internal.port;
    const loopbacks = [
      `http://127.0.0.1:${port}/a.png`,
      `https://127.0.0.1:${port}/a.png`,
      `http://localhost:${port}/a.png`,
      `http://LOCALHOST.:${port}/a.png`,
      `http://a.localhost:${port}/a.png`,
      `http://[::ffff:127.0.0.1]:${port}/a.png`,
      `http://[::ffff:7f00:1]:${port}/a.png`,
      `http://[::1]:${port}/a.png`,
      `http://2130706433:${port}/a.png`,
      `http://0x7f.0.0.1:${port}/a.png`,
      `http://127.1:${port}/a.png`,
      `http://0.0.0.0:${port}/a.png`,
      `http://[::]:${port}/a.png`,
    ];
    const probes = [
      ...loopbacks,
      ...loopbacks.map((to) => `http://127.0.0.2:${redirector.port}/a.png?to=${encodeURIComponent(to)}`),
      // two allowed hops, then loopback
      `http://127.0.0.2:${redirector.port}/a.png?to=${encodeURIComponent(`http://127.0.0.2:${redirector.port}/b.png?to=${encodeURIComponent(loopbacks[0]!)}`)}`,
      "http://169.254.169.254/latest/meta-data/a.png",
      "http://[::ffff:169.254.169.254]/a.png",
      "http://metadata.google.internal/computeMetadata/v1/a.png",
      "file:///etc/passwd",
      "data:image/png;base64,iVBORw0KGgo=",
      `ftp://127.0.0.1:${port}/a.png`,
    ];

    // Resources the PATCH operations change.
    const hook = await urlApp.request("POST", "/webhooks", { body: { url: "https://hooks.example.invalid/in", events: ["message.*"] } });
    const draft = await urlApp.request("POST", "/social/posts", { body: { accountIds: [X_SOCIAL_ID], text: "draft" } });
    expect([hook.status, draft.status]).toEqual([201, 201]);
    /** A body that is valid but for the probed field, per field the document lists. A new URL field must be added here. */
    const bodies: Record<string, { path?: string; body: (url: string) => unknown }> = {
      "POST /messages /media/url": { body: (url) => ({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { url } }) },
      "POST /messages /template/headerMediaUrl": {
        body: (url) => ({
          channel: "email",
          channelAccountId: SMTP_ID,
          to: { email: "ann@example.com" },
          type: "template",
          template: { name: "hello_world", params: { "body.1": "Ann" }, headerMediaUrl: url },
        }),
      },
      "POST /social/posts /media/0/url": { body: (url) => ({ accountIds: [X_SOCIAL_ID], text: `probe ${Math.random()}`, media: [{ url }], publishNow: true }) },
      "PATCH /social/posts/{id} /media/0/url": { path: `/social/posts/${draft.body.data.id}`, body: (url) => ({ media: [{ url }] }) },
      // A template's URL button goes to Meta as text; nothing of ours fetches it.
      "POST /templates /buttons/0/url": {
        body: (url) => ({
          channel: "whatsapp",
          name: `probe_${Math.random().toString(36).slice(2)}`,
          language: "en",
          category: "utility",
          body: "Hi {{1}}",
          buttons: [{ type: "url", text: "Open", url }],
          examples: { "body.1": "Ann" },
        }),
      },
      "POST /webhooks /url": { body: (url) => ({ url, events: ["message.*"] }) },
      "PATCH /webhooks/{id} /url": { path: `/webhooks/${hook.body.data.id}`, body: (url) => ({ url }) },
    };
    const fields = urlFields(spec);
    expect(fields.filter((f) => !(f in bodies))).toEqual([]); // every URL field of the document is probed
    expect(fields.length).toBeGreaterThanOrEqual(Object.keys(bodies).length);

    const statuses: Record<string, number> = {};
    for (const field of fields) {
      const [method, path] = field.split(" ") as [string, string];
      for (const url of probes) {
        const res = await urlApp.request(method, bodies[field]!.path ?? path, { body: bodies[field]!.body(url) });
        expect(res.status).toBeLessThan(500);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }
    // Sends, posts and webhook deliveries run here; nothing is due later that could still fetch.
    await urlApp.deps.queue.drain();
    console.log(
      `URL probes: ${fields.length} fields × ${probes.length} URLs, statuses ${JSON.stringify(statuses)}; redirector ${redirected} hits; loopback ${hits} hits`,
    );
    expect(redirected).toBeGreaterThan(0); // the redirect probes were accepted and really fetched (first hop)
    expect(hits).toBe(0);
  }, 120_000);
});
