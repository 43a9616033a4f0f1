/**
 * Tenancy sweep, generated from the OpenAPI document so new routes are covered as they land: company A owns
 * one of every resource; company B's key asks for each of them on every operation that takes an id → 404
 * (403 on the licensed modules, whose license names A), never a 2xx, never A's data; every list B reads holds
 * none of A's ids; and a key with one unrelated scope gets 403 on every other operation but the few any key may call.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { signLicense } from "../../scripts/sign-license";
import { inbound } from "../helpers/messaging";
import { createTestApp, type TestApp } from "../helpers/test-app";
import { createApiKey } from "../../src/modules/api-keys/api-keys.service";
import { createCompany } from "../../src/modules/companies/companies.service";

const PREFIX = "/api/public/v1";
const LICENSED = /^\/(pipeline|records|tasks|sources)\b|\/source$/;
/** Operations any valid key may call (no scope). */
const UNSCOPED = new Set(["GET /me", "GET /channels", "GET /openapi.json"]);
/** The one scope the narrow key has. */
const NARROW = new Set(["GET /billing/ledger"]);

let app: TestApp;
let bKey: string;
let noScopeKey: string;
const ids: Record<string, string> = {};
const operations: { method: string; path: string }[] = [];

/** The id of A's resource for a path's `{param}`, by the collection the parameter follows. */
function fill(path: string): string {
  return path
    .replace(/\/([a-z-]+)(?:\/imports)?\/\{(\w+)\}/g, (m, collection: string, param: string) => {
      if (param === "platform") return m.replace("{platform}", "x"); // not an id: B's own analytics
      const key = m.includes("/imports/") ? "imports" : param === "deliveryId" ? "deliveries" : param === "tagName" ? "tagName" : collection;
      const value = key === "tagName" ? "vip" : ids[key];
      if (!value) throw new Error(`no fixture id for ${key} in ${path}`);
      return m.replace(`{${param}}`, value);
    })
    .replace(/\{(\w+)\}/g, (_, p: string) => ids[p] ?? "x");
}

/** A body that passes validation, so the answer is about the id, not the shape. */
const bodies: Record<string, unknown> = {
  "PATCH /contacts/{id}": { firstName: "B" },
  "POST /contacts/{id}/tags": { tags: ["b"] },
  "POST /contacts/{id}/opt-out": { channels: ["whatsapp"] },
  "POST /contacts/{id}/opt-in": { channels: ["whatsapp"] },
  "PATCH /webhooks/{id}": { description: "b" },
  "POST /conversations/{id}/assign": { assigneeId: "b" },
  "POST /conversations/{id}/notes": { text: "b" },
  "PATCH /social/posts/{id}": { text: "b" },
  "POST /social/posts/{id}/schedule": { scheduledAt: "2099-01-01T00:00:00.000Z" },
  "PATCH /records/{id}": { title: "b" },
  "POST /records/{id}/move": { stageId: "x" },
  "PATCH /tasks/{id}": { title: "b" },
  "PATCH /sources/{id}": { name: "b" },
  "PUT /contacts/{id}/source": { sourceId: null },
  "PATCH /segments/{id}": { name: "b" },
  "POST /contacts/{id}/merge": { fromContactId: "0193a4b2-0000-7000-8000-0000000000ff" },
};

beforeAll(async () => {
  app = await createTestApp({
    config: {
      rate_limit: { requests_per_second: 1e9, burst: 1e9 },
      social_accounts: [{ id: "0193a4b2-0000-7000-8000-00000000c0c1", platform: "x", provider: "sandbox", name: "X" }],
    },
  });
  const devKey = readFileSync(join(import.meta.dir, "../fixtures/license-dev.private.key"), "utf8");
  writeFileSync(
    app.config.license.file,
    signLicense({ company: "default", modules: ["pipeline", "sources"], expiresAt: "2099-01-01T00:00:00.000Z", privateKey: devKey }),
  );
  const must = async (method: string, path: string, body?: unknown, headers?: Record<string, string>, raw?: string) => {
    const r = await app.request(method, path, { body, headers, raw });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  // Company A: one of everything.
  await inbound(app, "whatsapp", { phone: "+14155550101" });
  ids.contacts = (await must("POST", "/contacts", { identities: [{ channel: "whatsapp", value: "+14155550101" }], tags: ["vip"], optIn: true })).contact.id;
  ids.conversations = (await must("GET", "/conversations"))[0].id;
  ids.messages = (await must("POST", "/messages", { channel: "whatsapp", to: { contactId: ids.contacts }, type: "text", text: "hi" })).id;
  const form = new FormData();
  form.append("file", new File([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0])], "a.png", { type: "image/png" }));
  const media = await app.app.handle(
    new Request(`http://localhost${PREFIX}/media`, { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: form }),
  );
  ids.media = ((await media.json()) as { data: { id: string } }).data?.id ?? "missing-media";
  ids.webhooks = (await must("POST", "/webhooks", { url: "http://127.0.0.1:9/hook", events: ["message.sent"] })).id;
  await must("POST", `/webhooks/${ids.webhooks}/test`);
  ids.deliveries = (await must("GET", `/webhooks/${ids.webhooks}/deliveries`))[0]?.id ?? "missing-delivery";
  ids.imports = (
    await must(
      "POST",
      "/contacts/import",
      undefined,
      { "content-type": "application/x-ndjson" },
      JSON.stringify({ identities: [{ channel: "email", value: "i@example.com" }] }),
    )
  ).id;
  const template = (await must("GET", "/templates?channel=whatsapp")).find((t: { name: string }) => t.name === "hello_world").id;
  ids.templates = template;
  ids.segments = (await must("POST", "/segments", { name: "A's segment", filter: { field: "tag", op: "eq", value: "vip" } })).id;
  ids.campaigns = (
    await must("POST", "/campaigns", {
      name: "A",
      templateId: template,
      audience: { type: "tags", tags: ["vip"] },
      askValues: { "body.1": "x" },
      scheduledAt: "2099-01-01T00:00:00.000Z",
    })
  ).id;
  const account = (await must("GET", "/social/accounts"))[0].id;
  ids.posts = (await must("POST", "/social/posts", { text: "A's post", accountIds: [account] })).id;
  ids.records = (await must("POST", "/records", { title: "A's deal", contactId: ids.contacts })).id;
  ids.tasks = (await must("POST", "/tasks", { title: "A's task", recordId: ids.records })).id;
  ids.sources = (await must("POST", "/sources", { name: "A's source", type: "link", channel: "whatsapp" })).id;
  // Company B, and a key of A without any scope.
  const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "acme", name: "Acme" });
  bKey = (await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "b", scopes: ["*"] })).key;
  noScopeKey = (await app.newKey({ name: "billing-only", scopes: ["billing:read"] })).key;
  const spec = (await app.request("GET", "/openapi.json", { key: null })).body;
  for (const [path, ops] of Object.entries(spec.paths as Record<string, Record<string, unknown>>))
    if (path.startsWith(PREFIX))
      for (const method of Object.keys(ops))
        if (["get", "post", "patch", "put", "delete"].includes(method)) operations.push({ method: method.toUpperCase(), path: path.slice(PREFIX.length) });
  expect(operations).toContainEqual({ method: "GET", path: "/sources/{id}/qr.svg" }); // listed since issue 41
});
afterAll(() => app.close());

test("another company's key: 404 (403 for licensed modules) on every operation with an id, never A's data", async () => {
  const withId = operations.filter((o) => /\{(id|deliveryId)\}/.test(o.path));
  expect(withId.length).toBeGreaterThan(40);
  const aIds = Object.values(ids);
  const wrong: string[] = [];
  for (const op of withId) {
    const key = `${op.method} ${op.path}`;
    const res = await app.request(op.method, fill(op.path), { key: bKey, body: bodies[key] });
    const text = JSON.stringify(res.body);
    const allowed = LICENSED.test(op.path) ? [403, 404] : [404];
    if (!allowed.includes(res.status) || aIds.some((id) => text.includes(id))) wrong.push(`${key} → ${res.status} ${text.slice(0, 160)}`);
  }
  console.log(`tenancy: ${withId.length} operations with an id tried with another company's key`);
  expect(wrong).toEqual([]);
});

test("another company's lists hold none of A's ids", async () => {
  const lists = operations.filter((o) => o.method === "GET" && !/\{(id|deliveryId)\}/.test(o.path)).map((o) => ({ ...o, path: fill(o.path) }));
  const aIds = Object.values(ids);
  const leaks: string[] = [];
  for (const op of lists) {
    const res = await app.request("GET", op.path, { key: bKey });
    const text = JSON.stringify(res.body);
    for (const id of aIds) if (text.includes(id)) leaks.push(`${op.path} shows ${id}`);
  }
  console.log(`tenancy: ${lists.length} lists read with another company's key`);
  expect(leaks).toEqual([]);
});

test("a key with one unrelated scope (billing:read): 403 on every other operation but those any key may call", async () => {
  const wrong: string[] = [];
  for (const op of operations) {
    const key = `${op.method} ${op.path}`;
    const res = await app.request(op.method, fill(op.path), { key: noScopeKey, body: bodies[key] });
    const want = UNSCOPED.has(key) || NARROW.has(key) ? "2xx" : "403";
    const ok = want === "2xx" ? res.status < 300 : res.status === 403 && res.body?.error?.code === "API_SCOPE_MISSING";
    if (!ok) wrong.push(`${key} → ${res.status} ${JSON.stringify(res.body).slice(0, 120)}`);
  }
  console.log(`scopes: ${operations.length} operations tried with a key without scopes`);
  expect(wrong).toEqual([]);
});
