/** The cross-cutting HTTP contract (DESIGN §4) through the real app: auth codes, errors, request ids, rate limits. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { rowsOf, runScenarios } from "../../../test/helpers/scenarios";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 1000, burst: 1000 } } });
});
afterAll(() => app.close());

describe("authentication and errors", () => {
  runScenarios(
    () => app,
    [
      ...rowsOf("GET", "/me", [
        {
          name: "no key → 401 API_KEY_INVALID",
          key: null,
          status: 401,
          contains: { error: { code: "API_KEY_INVALID", details: [{ pointer: "header:Authorization" }] } },
        },
        {
          name: "unknown key → 401 API_KEY_INVALID",
          key: "sb_live_nope",
          status: 401,
          contains: { error: { code: "API_KEY_INVALID" } },
        },
        {
          name: "malformed Authorization → 401",
          key: null,
          headers: { authorization: "Basic abc" },
          status: 401,
          contains: { error: { code: "API_KEY_INVALID" } },
        },
        {
          name: "revoked key → 401 API_KEY_REVOKED",
          status: 401,
          contains: { error: { code: "API_KEY_REVOKED" } },
          setup: (a) =>
            useKey(a, { name: "revoked" }, async (id) => {
              await a.deps.db.sql("UPDATE api_keys SET revoked_at = 1 WHERE id = ?").run(id);
            }),
        },
        {
          name: "expired key → 401 API_KEY_EXPIRED",
          status: 401,
          contains: { error: { code: "API_KEY_EXPIRED" } },
          setup: (a) => useKey(a, { name: "old", expiresAt: new Date(a.clock.now().getTime() - 1000) }),
        },
      ]),
      {
        name: "key without scope → 403 API_SCOPE_MISSING",
        method: "GET",
        url: "/billing/ledger",
        status: 403,
        contains: { error: { code: "API_SCOPE_MISSING" } },
        setup: (a) => useKey(a, { name: "narrow", scopes: ["contacts:read"] }),
      },
      {
        name: "key with allow-list, request without address (no socket) → 403 IP_NOT_ALLOWED",
        method: "GET",
        url: "/me",
        status: 403,
        contains: { error: { code: "IP_NOT_ALLOWED" } },
        setup: (a) => useKey(a, { name: "ip", allowedIps: ["10.0.0.0/8"] }),
      },
      { name: "unknown route under the API → 404 NOT_FOUND", method: "GET", url: "/nope", status: 404, contains: { error: { code: "NOT_FOUND" } } },
      { name: "unknown route elsewhere → 404 NOT_FOUND", method: "GET", url: "/api/other", status: 404, contains: { error: { code: "NOT_FOUND" } } },
      {
        name: "bad query → 422 with query pointer",
        method: "GET",
        url: "/billing/ledger?limit=500",
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "query:limit" }] } },
      },
      {
        name: "bad cursor → 422 query:cursor",
        method: "GET",
        url: "/billing/ledger?cursor=!!",
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "query:cursor" }] } },
      },
      {
        name: "valid X-Request-Id echoed",
        method: "GET",
        url: "/me",
        headers: { "x-request-id": "req-12345678" },
        status: 200,
        responseHeaders: { "x-request-id": "req-12345678" },
      },
      {
        name: "invalid X-Request-Id → 422 header pointer",
        method: "GET",
        url: "/me",
        headers: { "x-request-id": "short" },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "header:X-Request-Id" }] } },
      },
      { name: "request id generated when absent", method: "GET", url: "/me", status: 200, responseHeaders: { "x-request-id": true } },
      {
        name: "rate limit headers on every API response",
        method: "GET",
        url: "/me",
        status: 200,
        responseHeaders: { ratelimit: true, "ratelimit-policy": '"default";q=1000;w=1' },
      },
      {
        name: "openapi.json needs no key",
        method: "GET",
        url: "/openapi.json",
        key: null,
        status: 200,
        check: (r) => expect(r.body.openapi).toStartWith("3.1"),
      },
      { name: "healthz", method: "GET", url: "/healthz", key: null, status: 200, contains: { status: "ok" } },
      { name: "readyz", method: "GET", url: "/readyz", key: null, status: 200, contains: { status: "ready" } },
    ],
  );
});

// Scenario helper: the next request of the scenario uses a new key made with these options.
async function useKey(a: TestApp, o: Parameters<TestApp["newKey"]>[0], after?: (id: string) => void | Promise<void>) {
  const { key, apiKey } = await a.newKey(o);
  await after?.(apiKey.id);
  const original = a.request;
  a.request = ((m: string, p: string, opts: any = {}) => {
    a.request = original;
    return original(m, p, { ...opts, key });
  }) as typeof a.request;
}

describe("GET /me", () => {
  test("returns key and company with balance, never the key itself", async () => {
    const res = await app.request("GET", "/me");
    expect(res.status).toBe(200);
    expect(res.body.data.key).toEqual({ id: app.apiKey.id, name: "admin", prefix: app.key.slice(0, 12), scopes: ["*"], allowedIps: [], expiresAt: null });
    expect(res.body.data.company).toMatchObject({ slug: "default", balance: { amount: "100.000000", unit: "USD" } });
    expect(JSON.stringify(res.body)).not.toContain(app.key);
  });

  test("X-API-Key works like Bearer", async () => {
    const res = await app.request("GET", "/me", { key: null, headers: { "x-api-key": app.key } });
    expect(res.status).toBe(200);
  });
});

describe("rate limit", () => {
  test("token bucket: burst then 429 RATE_LIMITED with Retry-After; refills with time", async () => {
    const a = await createTestApp({ config: { rate_limit: { requests_per_second: 2, burst: 3 } } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await a.request("GET", "/me")).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const limited = await a.request("GET", "/me");
      expect(limited.body.error.code).toBe("RATE_LIMITED");
      expect(limited.headers.get("retry-after")).toBe("1");
      expect(limited.headers.get("ratelimit")).toBe('"default";r=0;t=2');
      a.clock.advance(1000);
      expect((await a.request("GET", "/me")).status).toBe(200);
    } finally {
      await a.close();
    }
  });

  test("per-key rate limit overrides the default", async () => {
    const a = await createTestApp({ config: { rate_limit: { requests_per_second: 100, burst: 200 } } });
    try {
      const { key } = await a.newKey({ name: "slow", rateLimit: 1 });
      const s: number[] = [];
      for (let i = 0; i < 3; i++) s.push((await a.request("GET", "/me", { key })).status);
      expect(s).toEqual([200, 200, 429]);
    } finally {
      await a.close();
    }
  });
});

describe("IP allow-list over a real socket", () => {
  test("loopback allowed by CIDR, other ranges refused; X-Forwarded-For only from trusted proxies", async () => {
    const a = await createTestApp({ config: { server: { trusted_proxies: ["127.0.0.0/8"] } } });
    a.app.listen({ port: 0, hostname: "127.0.0.1" });
    const url = `http://127.0.0.1:${a.app.server!.port}/api/public/v1/me`;
    try {
      const ok = (await a.newKey({ name: "lo", allowedIps: ["127.0.0.1/32", "::1"] })).key;
      const v6 = (await a.newKey({ name: "v6", allowedIps: ["2001:db8::/32"] })).key;
      const get = (key: string, xff?: string) =>
        fetch(url, { headers: { authorization: `Bearer ${key}`, ...(xff ? { "x-forwarded-for": xff } : {}) } }).then((r) => r.status);
      expect(await get(ok)).toBe(200);
      expect(await get(v6)).toBe(403);
      // The peer (127.0.0.1) is a trusted proxy: the forwarded client address decides.
      expect(await get(v6, "2001:db8::7")).toBe(200);
      expect(await get(ok, "203.0.113.9")).toBe(403);
    } finally {
      await a.app.stop();
      await a.close();
    }
  });
});

describe("routing before auth, 405, probes", () => {
  let a: TestApp;
  beforeAll(async () => {
    a = await createTestApp();
  });
  afterAll(() => a.close());

  test("an unknown route is 404 with or without a key (no 401 for a route that does not exist)", async () => {
    for (const key of [null, "sb_live_nope", undefined]) {
      const res = await a.request("GET", "/no/such/route", key === undefined ? {} : { key });
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe("NOT_FOUND");
    }
    // A known route still needs its key.
    expect((await a.request("GET", "/contacts", { key: null })).status).toBe(401);
  });

  test("a known path with another method: 405 METHOD_NOT_ALLOWED with Allow", async () => {
    const res = await a.request("PUT", "/messages");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("GET, HEAD, POST"); // GET /messages lists them since issue 38;
    expect(res.body.error.code).toBe("METHOD_NOT_ALLOWED");
    const contact = await a.request("POST", "/contacts/0193a4b2-0000-7000-8000-00000000ffff");
    expect(contact.status).toBe(405);
    expect(contact.headers.get("allow")).toBe("DELETE, GET, HEAD, PATCH");
  });

  test("/healthz and /readyz answer a probe whatever its X-Request-Id", async () => {
    for (const id of ["", "x".repeat(1000), "id with spaces", "ü\u0001"])
      for (const path of ["/healthz", "/readyz"]) {
        const res = await a.app.handle(new Request(`http://localhost${path}`, { headers: { "x-request-id": id } }));
        expect(res.status).toBe(200);
      }
  });
});

describe("validation messages: plain language, one detail per field, at the field the client sent", () => {
  const details = async (method: string, url: string, body: unknown) => {
    const res = await app.request(method, url, { body });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("VALIDATION_FAILED");
    const text = JSON.stringify(res.body);
    expect(text).not.toMatch(/Expected|UnionEnum|union value/);
    const pointers = res.body.error.details.map((d: { pointer: string }) => d.pointer);
    expect(new Set(pointers).size).toBe(pointers.length);
    return res.body.error.details as { pointer: string; message: string }[];
  };
  test("an empty message body names each required field once", async () => {
    expect(await details("POST", "/messages", {})).toEqual([
      { pointer: "/channel", message: "is required" },
      { pointer: "/to", message: "is required" },
      { pointer: "/type", message: "is required" },
    ]);
  });
  test('"identities": "x" is reported at /identities', async () => {
    expect(await details("POST", "/contacts", { identities: "x" })).toEqual([{ pointer: "/identities", message: "must be an array" }]);
  });
  test("a value outside a closed set lists the allowed values", async () => {
    expect(await details("POST", "/contacts", { identities: [{ channel: "fax", value: "1" }] })).toEqual([
      { pointer: "/identities/0/channel", message: "must be one of: whatsapp, instagram, messenger, x, tiktok, telegram, email" },
    ]);
    expect(await details("POST", "/messages", { channel: "whatsapp", to: {}, type: "nope", createContact: "x" })).toEqual([
      { pointer: "/to", message: "give at least one of contactId, phone, email, handle" },
      { pointer: "/type", message: "must be one of: text, media, template, email, interactive" },
      { pointer: "/createContact", message: "must be true or false" },
    ]);
  });
  test("query values too", async () => {
    const res = await app.request("GET", "/contacts?tagMatch=zzz");
    expect(res.body.error.details).toEqual([{ pointer: "query:tagMatch", message: "must be one of: any, all" }]);
  });
});

describe("routing before authentication", () => {
  runScenarios(
    () => app,
    [
      {
        name: "wrong method on a known path → 405 with Allow (no key needed)",
        method: "DELETE",
        url: "/messages",
        key: null,
        status: 405,
        headers: {},
        contains: { error: { code: "METHOD_NOT_ALLOWED" } },
      },
      {
        name: "unknown API route without a key → 404, not 401",
        method: "GET",
        url: "/nope",
        key: null,
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
      { name: "unknown route outside the API → 404", method: "GET", url: "/api/nope", key: null, status: 404, contains: { error: { code: "NOT_FOUND" } } },
      {
        name: "healthz with a malformed request id still answers",
        method: "GET",
        url: "/healthz",
        key: null,
        headers: { "x-request-id": "bad id!" },
        status: 200,
        contains: { status: "ok" },
      },
      {
        name: "readyz with a short request id still answers",
        method: "GET",
        url: "/readyz",
        key: null,
        headers: { "x-request-id": "x" },
        status: 200,
        contains: { status: "ready" },
      },
      {
        name: "the API still refuses a malformed request id",
        method: "GET",
        url: "/me",
        headers: { "x-request-id": "x" },
        status: 422,
        contains: { error: { details: [{ pointer: "header:X-Request-Id" }] } },
      },
    ],
  );
  test("Allow lists the path's methods", async () => {
    const res = await app.request("PUT", "/contacts/0193a4b2-0000-7000-8000-0000000000ff", { key: null });
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("DELETE, GET, HEAD, PATCH");
  });
});

test('a nullable string that is too long says so (not "must be a string or null")', async () => {
  const a = await createTestApp();
  try {
    const res = await a.request("POST", "/contacts", { body: { firstName: "x".repeat(5000), identities: [{ channel: "email", value: "long@example.com" }] } });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([{ pointer: "/firstName", message: expect.stringMatching(/^must be at most \d+ characters$/) }]);
  } finally {
    await a.close();
  }
});
