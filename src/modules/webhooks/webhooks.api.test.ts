/** The webhooks API through the real app: endpoints CRUD, validation with pointers, URL policy, scopes, tenancy. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { rowsOf, runScenarios } from "../../../test/helpers/scenarios";
import { createApiKey } from "../api-keys/api-keys.service";
import { createCompany } from "../companies/companies.service";
import { EVENT_TYPES } from "../../events";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 1000, burst: 1000 } } });
});
afterAll(() => app.close());

const create = (body: Record<string, unknown>) => app.request("POST", "/webhooks", { body });
const valid = { url: "https://erp.example.com/hooks", events: ["message.*", "contact.created"] };

describe("endpoints", () => {
  test("create returns the secret once; detail and list never do", async () => {
    const res = await create({ ...valid, description: "ERP" });
    expect(res.status).toBe(201);
    const e = res.body.data;
    expect(e).toMatchObject({ url: valid.url, events: valid.events, description: "ERP", enabled: true, disabledReason: null, previousSecretExpiresAt: null });
    expect(e.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(e.secret.slice(6), "base64").length).toBe(32);

    const detail = await app.request("GET", `/webhooks/${e.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.data.secret).toBeUndefined();
    expect(detail.body.data.id).toBe(e.id);

    const list = await app.request("GET", "/webhooks");
    expect(list.status).toBe(200);
    expect(list.body.data.find((x: { id: string }) => x.id === e.id)).toBeTruthy();
    expect(list.body.data.every((x: Record<string, unknown>) => !("secret" in x))).toBe(true);
  });

  test("duplicate subscriptions are folded; enabled=false is stored as a manual disable", async () => {
    const res = await create({ url: "http://10.0.0.5/x", events: ["contact.created", "contact.created"], enabled: false });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ events: ["contact.created"], enabled: false, disabledReason: "manual" });
  });

  test("list pages newest first with an opaque cursor", async () => {
    for (let i = 0; i < 3; i++) await create(valid);
    const p1 = await app.request("GET", "/webhooks?limit=2");
    expect(p1.body.data).toHaveLength(2);
    expect(p1.body.page).toMatchObject({ limit: 2 });
    expect(p1.body.data[0].id > p1.body.data[1].id).toBe(true);
    const p2 = await app.request("GET", `/webhooks?limit=2&cursor=${p1.body.page.nextCursor}`);
    expect(p2.body.data[0].id < p1.body.data[1].id).toBe(true);
  });

  test("update url, events, description, enabled; re-enabling clears the reason", async () => {
    const id = (await create(valid)).body.data.id;
    const off = await app.request("PATCH", `/webhooks/${id}`, { body: { enabled: false } });
    expect(off.body.data).toMatchObject({ enabled: false, disabledReason: "manual" });
    const res = await app.request("PATCH", `/webhooks/${id}`, {
      body: { url: "https://other.example.com/h", events: ["conversation.*"], description: null, enabled: true },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      url: "https://other.example.com/h",
      events: ["conversation.*"],
      description: null,
      enabled: true,
      disabledReason: null,
    });
  });

  test("rotate-secret returns a new secret once and the old one's expiry (24 h)", async () => {
    const created = (await create(valid)).body.data;
    const res = await app.request("POST", `/webhooks/${created.id}/rotate-secret`);
    expect(res.status).toBe(200);
    expect(res.body.data.secret).toMatch(/^whsec_/);
    expect(res.body.data.secret).not.toBe(created.secret);
    expect(Date.parse(res.body.data.previousSecretExpiresAt) - app.clock.now().getTime()).toBe(24 * 3600 * 1000);
  });

  test("delete removes it (then 404)", async () => {
    const id = (await create(valid)).body.data.id;
    const res = await app.request("DELETE", `/webhooks/${id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ id, deleted: true });
    expect((await app.request("GET", `/webhooks/${id}`)).status).toBe(404);
    expect((await app.request("DELETE", `/webhooks/${id}`)).status).toBe(404);
  });

  test("Idempotency-Key replays the create (same secret, one endpoint)", async () => {
    const headers = { "idempotency-key": "wh-create-1" };
    const a = await app.request("POST", "/webhooks", { body: valid, headers });
    const b = await app.request("POST", "/webhooks", { body: valid, headers });
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.body.data.id).toBe(a.body.data.id);
  });

  test("another company's endpoint is 404, never 403", async () => {
    const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
    const { key } = await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "o", scopes: ["*"] });
    const id = (await create(valid)).body.data.id;
    for (const [m, p] of [
      ["GET", `/webhooks/${id}`],
      ["PATCH", `/webhooks/${id}`],
      ["DELETE", `/webhooks/${id}`],
      ["POST", `/webhooks/${id}/rotate-secret`],
      ["POST", `/webhooks/${id}/test`],
      ["GET", `/webhooks/${id}/deliveries`],
    ] as const) {
      const res = await app.request(m, p, { key, body: m === "PATCH" ? { enabled: false } : undefined });
      expect(`${m} ${p} ${res.status}`).toBe(`${m} ${p} 404`);
    }
    const list = await app.request("GET", "/webhooks", { key });
    expect(list.body.data).toEqual([]);
  });

  test("event-types lists the catalogue with examples", async () => {
    const res = await app.request("GET", "/webhooks/event-types");
    expect(res.status).toBe(200);
    const names = res.body.data.map((e: { name: string }) => e.name);
    for (const n of [
      "message.sent",
      "message.delivered",
      "message.read",
      "message.failed",
      "message.received",
      "contact.created",
      "contact.updated",
      "contact.deleted",
      "contact.opted_in",
      "contact.opted_out",
      "conversation.opened",
      "conversation.assigned",
      "conversation.closed",
      "webhook.test",
      "webhook.endpoint_disabled",
    ])
      expect(names).toContain(n);
    expect(res.body.data.length).toBe(EVENT_TYPES.length);
    expect(res.body.data[0].example.message.metadata).toBeDefined();
  });

  test("OpenAPI documents every webhooks operation", async () => {
    const doc = (await app.request("GET", "/openapi.json", { key: null })).body;
    const ops = Object.values(doc.paths as Record<string, Record<string, { operationId?: string }>>).flatMap((p) => Object.values(p).map((o) => o.operationId));
    for (const op of [
      "listWebhooks",
      "createWebhook",
      "getWebhook",
      "updateWebhook",
      "deleteWebhook",
      "rotateWebhookSecret",
      "testWebhook",
      "listWebhookDeliveries",
      "redeliverWebhook",
      "listWebhookEventTypes",
    ])
      expect(ops).toContain(op);
  });
});

describe("bad input → 422 with pointers", () => {
  runScenarios(
    () => app,
    [
      ...rowsOf("POST", "/webhooks", [
        {
          name: "missing url and events",
          body: {},
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED" } },
          check: (r) => expect(r.body.error.details.map((d: { pointer: string }) => d.pointer)).toEqual(expect.arrayContaining(["/url", "/events"])),
        },
        {
          name: "not a URL",
          body: { url: "not a url", events: ["message.sent"] },
          status: 422,
          contains: { error: { details: [{ pointer: "/url" }] } },
        },
        {
          name: "ftp scheme",
          body: { url: "ftp://example.com/x", events: ["message.sent"] },
          status: 422,
          contains: { error: { details: [{ pointer: "/url", message: "must use http or https" }] } },
        },
        {
          name: "link-local (cloud metadata) address",
          body: { url: "http://169.254.169.254/latest/meta-data/", events: ["message.sent"] },
          status: 422,
          contains: { error: { details: [{ pointer: "/url" }] } },
        },
        {
          name: "IPv4-mapped link-local address",
          body: { url: "http://[::ffff:169.254.169.254]/", events: ["message.sent"] },
          status: 422,
          contains: { error: { details: [{ pointer: "/url" }] } },
        },
        {
          name: "metadata host name",
          body: { url: "http://metadata.google.internal/computeMetadata/v1/", events: ["message.sent"] },
          status: 422,
          contains: { error: { details: [{ pointer: "/url" }] } },
        },
        {
          name: "javascript: scheme",
          body: { url: "javascript:alert(1)", events: ["message.sent"] },
          status: 422,
          contains: { error: { details: [{ pointer: "/url" }] } },
        },
        {
          name: "unknown event type and bad pattern, each with its index",
          body: { url: "https://example.com/h", events: ["message.sent", "message.exploded", "message*", "nothing.*"] },
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/events/1" }, { pointer: "/events/2" }, { pointer: "/events/3" }] } },
        },
        {
          name: "empty events",
          body: { url: "https://example.com/h", events: [] },
          status: 422,
          contains: { error: { details: [{ pointer: "/events" }] } },
        },
        {
          name: "a caller cannot choose the secret (unknown fields are dropped)",
          body: { ...valid, secret: "whsec_bWluZQ==" },
          status: 201,
          check: (r) => expect(r.body.data.secret).not.toBe("whsec_bWluZQ=="),
        },
        {
          name: "URL and events problems together",
          body: { url: "gopher://x", events: ["nope"] },
          status: 422,
          check: (r) => expect(r.body.error.details.map((d: { pointer: string }) => d.pointer)).toEqual(["/url", "/events/0"]),
        },
      ]),
      {
        name: "PATCH with a bad event",
        method: "PATCH",
        url: "/webhooks/PLACEHOLDER",
        body: { events: ["contact.*", "contact.exploded"] },
        status: 422,
        contains: { error: { details: [{ pointer: "/events/1" }] } },
        setup: async (a) => {
          const id = (await a.request("POST", "/webhooks", { body: valid })).body.data.id;
          patchNextUrl(a, id);
        },
      },
      {
        name: "deliveries: bad status filter",
        method: "GET",
        url: "/webhooks/x/deliveries?status=lost",
        status: 422,
        contains: { error: { details: [{ pointer: "query:status" }] } },
      },
      {
        name: "key without webhooks:write → 403",
        method: "POST",
        url: "/webhooks",
        body: valid,
        status: 403,
        contains: { error: { code: "API_SCOPE_MISSING" } },
        setup: (a) => useKey(a, ["webhooks:read"]),
      },
      {
        name: "key without webhooks:read → 403",
        method: "GET",
        url: "/webhooks",
        status: 403,
        contains: { error: { code: "API_SCOPE_MISSING" } },
        setup: (a) => useKey(a, ["messages:send"]),
      },
      {
        name: "unknown endpoint → 404",
        method: "GET",
        url: "/webhooks/0190aaaa-0000-7000-8000-000000000000",
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
    ],
  );
});

describe("URL policy from [webhooks] config", () => {
  let strict: TestApp;
  beforeAll(async () => {
    strict = await createTestApp({
      config: { webhooks: { allow_private_networks: false, deny: ["evil.example.com", "*.blocked.example", "203.0.113.0/24"], allow: [] } },
    });
  });
  afterAll(() => strict.close());

  for (const [url, fragment] of [
    ["http://127.0.0.1:9000/h", "private network"],
    ["http://10.1.2.3/h", "private network"],
    ["http://192.168.1.10/h", "private network"],
    ["http://[::1]/h", "private network"],
    ["http://169.254.169.254/latest/meta-data", "link-local"],
    ["http://localhost:8080/h", "private network"],
    ["https://evil.example.com/h", "deny"],
    ["https://a.blocked.example/h", "deny"],
    ["http://203.0.113.9/h", "deny"],
  ] as const) {
    test(`refuses ${url}`, async () => {
      const res = await strict.request("POST", "/webhooks", { body: { url, events: ["message.sent"] } });
      expect(res.status).toBe(422);
      expect(res.body.error.details[0].pointer).toBe("/url");
      expect(res.body.error.details[0].message).toContain(fragment);
    });
  }

  test("accepts a public host", async () => {
    expect((await strict.request("POST", "/webhooks", { body: { url: "https://hooks.example.org/x", events: ["message.sent"] } })).status).toBe(201);
  });

  test("allow list restricts to the listed hosts", async () => {
    const a = await createTestApp({ config: { webhooks: { allow: ["erp.corp.example", "10.20.0.0/16"] } } });
    try {
      expect((await a.request("POST", "/webhooks", { body: { url: "https://erp.corp.example/h", events: ["message.sent"] } })).status).toBe(201);
      expect((await a.request("POST", "/webhooks", { body: { url: "http://10.20.3.4/h", events: ["message.sent"] } })).status).toBe(201);
      const res = await a.request("POST", "/webhooks", { body: { url: "http://10.30.3.4/h", events: ["message.sent"] } });
      expect(res.status).toBe(422);
      expect(res.body.error.details[0]).toMatchObject({ pointer: "/url" });
      expect(res.body.error.details[0].message).toContain("allow");
    } finally {
      await a.close();
    }
  });
});

// Scenario helpers: the next request uses a key with these scopes / this endpoint id in its URL.
async function useKey(a: TestApp, scopes: string[]) {
  const { key } = await a.newKey({ name: "narrow", scopes });
  const original = a.request;
  a.request = ((m: string, p: string, opts: any = {}) => {
    a.request = original;
    return original(m, p, { ...opts, key });
  }) as typeof a.request;
}
function patchNextUrl(a: TestApp, id: string) {
  const original = a.request;
  a.request = ((m: string, p: string, opts: any = {}) => {
    a.request = original;
    return original(m, p.replace("PLACEHOLDER", id), opts);
  }) as typeof a.request;
}
