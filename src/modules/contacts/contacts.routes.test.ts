/** The contacts API through the real app: upsert rules, validation, PATCH/DELETE, tags, consent, listing. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rowsOf, runScenarios } from "../../../test/helpers/scenarios";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 10000, burst: 10000 } } });
  await app.request("POST", "/custom-fields", { body: { key: "vip", label: "VIP", type: "boolean" } });
  await app.request("POST", "/custom-fields", { body: { key: "plan", label: "Plan", type: "select", options: ["free", "pro"] } });
  await app.request("POST", "/custom-fields", { body: { key: "score", label: "Score", type: "number" } });
  await app.request("POST", "/custom-fields", { body: { key: "birthday", label: "Birthday", type: "date" } });
});
afterAll(() => app.close());

const upsert = (body: unknown) => app.request("POST", "/contacts", { body });
const events = (type: string) => app.emitted.filter((e) => e.type === type).map((e) => JSON.parse(JSON.stringify(e.data)));

describe("POST /contacts (upsert)", () => {
  runScenarios(
    () => app,
    [
      ...rowsOf("POST", "/contacts", [
        {
          name: "creates → 201 created:true with the full contact",
          body: {
            firstName: "Ada",
            lastName: "Lovelace",
            identities: [
              { channel: "whatsapp", value: "+44 20 7946 0958" },
              { channel: "email", value: "Ada@Example.com" },
            ],
            tags: ["vip", "london"],
            customFields: { vip: true, plan: "pro" },
            optIn: true,
          },
          status: 201,
          contains: {
            data: {
              created: true,
              contact: {
                firstName: "Ada",
                identities: [
                  { channel: "email", value: "ada@example.com", status: "verified" },
                  { channel: "whatsapp", value: "+442079460958", status: "verified" },
                ],
                tags: ["london", "vip"],
                customFields: { vip: true, plan: "pro" },
                consent: { whatsapp: { status: "opted_in" }, email: { status: "opted_in" } },
                blocked: false,
              },
            },
          },
        },
        {
          name: "same identity → 200 created:false, updates, adds identity and tag",
          body: {
            city: "London",
            identities: [
              { channel: "email", value: "ada@example.com" },
              { channel: "telegram", value: "1815" },
            ],
            tags: ["math"],
          },
          status: 200,
          contains: { data: { created: false, contact: { firstName: "Ada", city: "London", tags: ["london", "math", "vip"] } } },
          check: (r) => expect(r.body.data.contact.identities).toHaveLength(3),
        },
        {
          name: "identities of two different contacts → 409 CONFLICT naming them",
          setup: async () => void (await upsert({ identities: [{ channel: "email", value: "grace@example.com" }] })),
          body: {
            firstName: "X",
            identities: [
              { channel: "email", value: "ada@example.com" },
              { channel: "email", value: "grace@example.com" },
            ],
          },
          status: 409,
          contains: { error: { code: "CONFLICT", details: [{ pointer: "/identities/0" }, { pointer: "/identities/1" }] } },
        },
        {
          name: "every bad field reported at once (422), nothing written",
          body: {
            identities: [
              { channel: "whatsapp", value: "+1 555" },
              { channel: "email", value: "not-an-email" },
              { channel: "x", value: "@ok_name" },
            ],
            customFields: { vip: "yes", nope: 1, plan: "gold", birthday: "2024-02-30" },
            tags: ["  "],
          },
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED" } },
          check: async (r, a) => {
            const pointers = r.body.error.details.map((d: { pointer: string }) => d.pointer).sort();
            expect(pointers).toEqual([
              "/customFields/birthday",
              "/customFields/nope",
              "/customFields/plan",
              "/customFields/vip",
              "/identities/0/value",
              "/identities/1/value",
              "/tags/0",
            ]);
            expect(await a.deps.db.sql("SELECT count(*) AS n FROM contact_identities WHERE value = '@ok_name'").get()).toEqual({ n: 0 });
          },
        },
        {
          name: "unknown channel → 422 pointer",
          body: { identities: [{ channel: "fax", value: "1" }] },
          status: 422,
          contains: { error: { details: [{ pointer: "/identities/0/channel" }] } },
        },
        {
          name: "no identities → 422",
          body: { identities: [] },
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED" } },
        },
        {
          name: "missing identities → 422",
          body: { firstName: "A" },
          status: 422,
          contains: { error: { details: [{ pointer: "/identities" }] } },
        },
        {
          name: "@username is stored pending",
          body: { identities: [{ channel: "instagram", value: "@Some.Body" }] },
          status: 201,
          contains: { data: { contact: { identities: [{ channel: "instagram", value: "@some.body", status: "pending" }] } } },
        },
        {
          name: "read-only key → 403 API_SCOPE_MISSING",
          body: { identities: [{ channel: "email", value: "z@example.com" }] },
          status: 403,
          contains: { error: { code: "API_SCOPE_MISSING" } },
          setup: async (a) => {
            const { key } = await a.newKey({ name: "ro", scopes: ["contacts:read"] });
            const original = a.request;
            a.request = ((m: string, p: string, o: any = {}) => ((a.request = original), original(m, p, { ...o, key }))) as typeof a.request;
          },
        },
      ]),
    ],
  );

  test("Idempotency-Key replays the stored 201", async () => {
    const body = { identities: [{ channel: "email", value: "idem@example.com" }] };
    const a = await app.request("POST", "/contacts", { body, headers: { "idempotency-key": "k-1" } });
    const b = await app.request("POST", "/contacts", { body, headers: { "idempotency-key": "k-1" } });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.body.data.contact.id).toBe(a.body.data.contact.id);
  });

  test("20 parallel upserts of one identity make exactly one contact", async () => {
    const res = await Promise.all(
      Array.from({ length: 20 }, (_, i) => upsert({ firstName: `P${i}`, identities: [{ channel: "whatsapp", value: "+14155550188" }] })),
    );
    expect(res.map((r) => r.status).sort((a, b) => b - a)).toEqual([201, ...Array(19).fill(200)]);
    expect(new Set(res.map((r) => r.body.data.contact.id)).size).toBe(1);
    expect(await app.deps.db.sql("SELECT count(*) AS n FROM contact_identities WHERE value = '+14155550188'").get()).toEqual({ n: 1 });
  });

  test("an unchanged upsert emits no contact.updated", async () => {
    const body = { firstName: "Same", identities: [{ channel: "email", value: "same@example.com" }] };
    await upsert(body);
    const before = events("contact.updated").length;
    const r = await upsert(body);
    expect(r.status).toBe(200);
    expect(events("contact.updated").length).toBe(before);
  });
});

describe("GET / PATCH / DELETE /contacts/{id}", () => {
  test("PATCH: absent unchanged, null clears, identities and tags replace, conflicts 409", async () => {
    const c = (
      await upsert({
        firstName: "Pat",
        lastName: "Ch",
        city: "Rome",
        identities: [{ channel: "email", value: "pat@example.com" }],
        tags: ["a"],
        customFields: { score: 3 },
      })
    ).body.data.contact;
    const r = await app.request("PATCH", `/contacts/${c.id}`, {
      body: {
        lastName: null,
        customFields: { score: null, vip: false },
        blocked: true,
        identities: [{ channel: "whatsapp", value: "+4915112345670" }],
        tags: ["b"],
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ firstName: "Pat", lastName: null, city: "Rome", blocked: true, customFields: { vip: false }, tags: ["b"] });
    expect(r.body.data.identities).toEqual([{ channel: "whatsapp", value: "+4915112345670", status: "verified" }]);
    const conflict = await app.request("PATCH", `/contacts/${c.id}`, { body: { identities: [{ channel: "email", value: "ada@example.com" }] } });
    expect(conflict.status).toBe(409);
    const bad = await app.request("PATCH", `/contacts/${c.id}`, { body: { customFields: { score: "x" } } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].pointer).toBe("/customFields/score");
  });

  test("DELETE erases PII, keeps a tombstone, then 404; the identity can be reused", async () => {
    const c = (await upsert({ firstName: "Del", identities: [{ channel: "email", value: "del@example.com" }], tags: ["gone"], customFields: { vip: true } }))
      .body.data.contact;
    const d = await app.request("DELETE", `/contacts/${c.id}`);
    expect(d.status).toBe(200);
    expect(d.body.data).toEqual({ id: c.id, deleted: true });
    expect((await app.request("GET", `/contacts/${c.id}`)).status).toBe(404);
    expect((await app.request("DELETE", `/contacts/${c.id}`)).status).toBe(404);
    expect((await app.request("PATCH", `/contacts/${c.id}`, { body: { firstName: "x" } })).status).toBe(404);
    const row = (await app.deps.db.sql("SELECT first_name, custom_fields, deleted_at FROM contacts WHERE id = ?").get(c.id)) as Record<string, unknown>;
    expect(row.first_name).toBeNull();
    expect(row.custom_fields).toBe("{}");
    expect(row.deleted_at).not.toBeNull();
    expect(await app.deps.db.sql("SELECT count(*) AS n FROM contact_identities WHERE contact_id = ?").get(c.id)).toEqual({ n: 0 });
    expect(events("contact.deleted").at(-1).contact).toMatchObject({ id: c.id, firstName: null, identities: [] });
    expect((await upsert({ identities: [{ channel: "email", value: "del@example.com" }] })).status).toBe(201);
  });

  test("another company's contact is 404", async () => {
    const c = (await upsert({ identities: [{ channel: "email", value: "mine@example.com" }] })).body.data.contact;
    const { createCompany } = await import("../companies/companies.service");
    const { createApiKey } = await import("../api-keys/api-keys.service");
    const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
    const { key } = await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "o", scopes: ["*"] });
    expect((await app.request("GET", `/contacts/${c.id}`, { key })).status).toBe(404);
    expect((await app.request("GET", `/contacts?q=mine`, { key })).body.data).toEqual([]);
    // Same identity in another company is a different contact.
    expect((await app.request("POST", "/contacts", { key, body: { identities: [{ channel: "email", value: "mine@example.com" }] } })).status).toBe(201);
  });
});

describe("tags and consent endpoints", () => {
  test("add / remove tags; unknown tag 404", async () => {
    const c = (await upsert({ identities: [{ channel: "email", value: "tags@example.com" }] })).body.data.contact;
    const add = await app.request("POST", `/contacts/${c.id}/tags`, { body: { tags: ["x", "y z"] } });
    expect(add.body.data.tags).toEqual(["x", "y z"]);
    const del = await app.request("DELETE", `/contacts/${c.id}/tags/${encodeURIComponent("y z")}`);
    expect(del.status).toBe(200);
    expect(del.body.data.tags).toEqual(["x"]);
    expect((await app.request("DELETE", `/contacts/${c.id}/tags/never-made`)).status).toBe(404);
  });

  test("opt-out/opt-in per channel; a channel without identity → 422", async () => {
    const c = (await upsert({ identities: [{ channel: "whatsapp", value: "+4915112345671" }], optIn: true })).body.data.contact;
    const out = await app.request("POST", `/contacts/${c.id}/opt-out`, { body: { channels: ["whatsapp"] } });
    expect(out.status).toBe(200);
    expect(out.body.data.consent.whatsapp.status).toBe("opted_out");
    expect(events("contact.opted_out").at(-1)).toMatchObject({ channel: "whatsapp", source: "api", contact: { id: c.id } });
    const bad = await app.request("POST", `/contacts/${c.id}/opt-in`, { body: { channels: ["whatsapp", "email"] } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([{ pointer: "/channels/1", message: "the contact has no email identity" }]);
    const again = await app.request("POST", `/contacts/${c.id}/opt-in`, { body: { channels: ["whatsapp"] } });
    expect(again.body.data.consent.whatsapp.status).toBe("opted_in");
  });

  test("POST /tags 201, duplicate 409; GET /tags counts contacts", async () => {
    expect((await app.request("POST", "/tags", { body: { name: "fresh" } })).status).toBe(201);
    expect((await app.request("POST", "/tags", { body: { name: "fresh" } })).status).toBe(409);
    const tags = (await app.request("GET", "/tags?limit=200")).body.data as { name: string; contactCount: number }[];
    expect(tags.find((t) => t.name === "fresh")?.contactCount).toBe(0);
    expect(tags.find((t) => t.name === "vip")?.contactCount).toBe(1);
  });

  test("custom fields: list, validation, duplicate", async () => {
    const list = await app.request("GET", "/custom-fields");
    expect(list.body.data.map((f: { key: string }) => f.key)).toEqual(["birthday", "plan", "score", "vip"]);
    const bad = await app.request("POST", "/custom-fields", { body: { key: "Bad Key", label: "x", type: "select" } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: { pointer: string }) => d.pointer)).toEqual(["/key", "/options"]);
    expect((await app.request("POST", "/custom-fields", { body: { key: "vip", label: "x", type: "text" } })).status).toBe(409);
  });
});

describe("GET /contacts filters", () => {
  let ids: Record<string, string>;
  beforeAll(async () => {
    const mk = async (n: string, body: Record<string, unknown>) => [n, (await upsert(body)).body.data.contact.id] as const;
    ids = Object.fromEntries([
      await mk("f1", { firstName: "Zelda", lastName: "Fitz", identities: [{ channel: "email", value: "zelda@filter.test" }], tags: ["flt-a"] }),
      await mk("f2", {
        firstName: "Zed",
        lastName: "Zimmer",
        identities: [{ channel: "whatsapp", value: "+33612345678" }],
        tags: ["flt-a", "flt-b"],
        optIn: true,
      }),
      await mk("f3", { firstName: "Yan", identities: [{ channel: "telegram", value: "@zorro_f" }], tags: ["flt-b"] }),
    ]);
  });
  const names = async (qs: string) => {
    const r = await app.request("GET", `/contacts?${qs}`);
    if (r.status !== 200) throw new Error(JSON.stringify(r.body));
    return (r.body.data as { id: string }[]).map((c) => Object.entries(ids).find(([, id]) => id === c.id)?.[0]).filter(Boolean);
  };
  test("tag (one, any, all)", async () => {
    expect(await names("tag=flt-a")).toEqual(["f2", "f1"]);
    expect(await names("tag=flt-a&tag=flt-b")).toEqual(["f3", "f2", "f1"]);
    expect(await names("tag=flt-a&tag=flt-b&tagMatch=all")).toEqual(["f2"]);
    expect(await names("tag=nope")).toEqual([]);
  });
  test("channel, consent, q, createdAfter", async () => {
    expect(await names("tag=flt-a&tag=flt-b&channel=telegram")).toEqual(["f3"]);
    expect(await names("tag=flt-a&tag=flt-b&consent=whatsapp:opted_in")).toEqual(["f2"]);
    expect(await names("tag=flt-a&tag=flt-b&consent=whatsapp:unknown")).toEqual(["f3", "f1"]);
    expect(await names("q=ze")).toEqual(["f2", "f1"]);
    expect(await names("q=zed%20zi")).toEqual(["f2"]);
    expect(await names("q=zimm")).toEqual(["f2"]);
    expect(await names("q=3361")).toEqual(["f2"]);
    expect(await names("q=zorro")).toEqual(["f3"]);
    expect(await names("q=zelda@")).toEqual(["f1"]);
    expect(await names(`tag=flt-a&createdAfter=${encodeURIComponent(new Date(Date.now() + 3600_000).toISOString())}`)).toEqual([]);
  });
  test("q on names: word prefixes in any order, accent- and case-insensitive; follows renames and erasure", async () => {
    const c = (await upsert({ firstName: "José María", lastName: "Öztürk-Quist", identities: [{ channel: "email", value: "jm@search.test" }] })).body.data
      .contact;
    const found = async (q: string) => (await app.request("GET", `/contacts?q=${encodeURIComponent(q)}`)).body.data.map((x: { id: string }) => x.id);
    for (const q of ["jose", "MARIA", "ozturk", "quis", "quist jos", "Öztürk, José", "ozturk-qu", "jose_mar"]) expect(await found(q)).toEqual([c.id]);
    expect(await found("jose zed")).toEqual([]);
    expect(await found('"')).toEqual([]); // no word: identity prefixes only, no FTS syntax error
    await app.request("PATCH", `/contacts/${c.id}`, { body: { firstName: "Pedro" } });
    expect(await found("jose")).toEqual([]);
    expect(await found("pedro quist")).toEqual([c.id]);
    await app.request("DELETE", `/contacts/${c.id}`);
    expect(await found("pedro")).toEqual([]);
  });
  test("cursor pagination walks every contact once", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await app.request("GET", `/contacts?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      seen.push(...r.body.data.map((c: { id: string }) => c.id));
      cursor = r.body.page.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort().reverse());
    expect(seen.length).toBe(
      ((await app.deps.db.sql("SELECT count(*) AS n FROM contacts WHERE deleted_at IS NULL AND company_id = ?").get(app.company.id)) as { n: number }).n,
    );
  });
  test("bad filters → 422 with query pointers", async () => {
    const r = await app.request("GET", "/contacts?consent=whatsapp&channel=fax&createdAfter=yesterday");
    expect(r.status).toBe(422);
    expect(r.body.error.details.map((d: { pointer: string }) => d.pointer).sort()).toEqual(["query:channel", "query:consent", "query:createdAfter"]);
  });
});

test("DELETE /contacts/{id}/tags/{tagName}: names with % and encoded-looking text are removed as written (once decoded)", async () => {
  const c = (
    await app.request("POST", "/contacts", { body: { identities: [{ channel: "email", value: "pct@example.com" }], tags: ["a b", "50%off", "x%20y"] } })
  ).body.data.contact.id;
  for (const [tag, left] of [
    ["50%off", ["a b", "x%20y"]],
    ["x%20y", ["a b"]],
    ["a b", []],
  ] as const) {
    const res = await app.request("DELETE", `/contacts/${c}/tags/${encodeURIComponent(tag)}`);
    expect(res.status).toBe(200);
    expect(res.body.data.tags).toEqual(left);
  }
});
