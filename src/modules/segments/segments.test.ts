/**
 * /segments through the real app (DESIGN §19): every route and error as scenario tables, the filter's 422s with
 * their pointers, and campaigns whose audience is a segment or a filter — the estimate on the same verdict (§9)
 * and the fan-out to exactly the segment's eligible contacts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { inbound } from "../../../test/helpers/messaging";
import { rowsOf, runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createApiKey } from "../api-keys/api-keys.service";
import { createCompany } from "../companies/companies.service";
import { modulesOf } from "../../assembly";

const DAY = 86_400_000;
const ISTANBUL = {
  all: [
    { field: "consent.whatsapp", op: "eq", value: "opted_in" },
    { field: "city", op: "eq", value: "Istanbul" },
    { field: "lastInboundAt", op: "gte", value: "-P30D" },
  ],
};

let app: TestApp;
/** Contact ids by name. */
const who: Record<string, string> = {};

/** A WhatsApp contact: wrote in `wroteAgo` ms ago (or never), opted in or not, in a city. */
async function person(name: string, phone: string, o: { city?: string; optIn?: boolean; wroteAgo?: number; blocked?: boolean; plan?: string }) {
  if (o.wroteAgo !== undefined) await inbound(app, "whatsapp", { phone, name }, "hi", o.wroteAgo);
  const res = await app.request("POST", "/contacts", {
    body: {
      identities: [{ channel: "whatsapp", value: phone }],
      firstName: name,
      city: o.city ?? null,
      ...(o.optIn === undefined ? {} : { optIn: o.optIn }),
      ...(o.plan ? { customFields: { plan: o.plan } } : {}),
    },
  });
  if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  who[name] = res.body.data.contact.id;
  if (o.blocked) await app.request("PATCH", `/contacts/${who[name]}`, { body: { blocked: true } });
}

beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
  await app.request("POST", "/custom-fields", { body: { key: "plan", label: "Plan", type: "select", options: ["gold", "silver"] } });
  await person("Ayse", "+905551110001", { city: "Istanbul", optIn: true, wroteAgo: 2 * DAY, plan: "gold" }); // in
  await person("Burak", "+905551110002", { city: "Istanbul", optIn: true, wroteAgo: 40 * DAY }); // wrote too long ago
  await person("Cem", "+905551110003", { city: "Istanbul", optIn: false, wroteAgo: 1 * DAY }); // opted out
  await person("Deniz", "+905551110004", { city: "Ankara", optIn: true, wroteAgo: 1 * DAY }); // elsewhere
  await person("Emre", "+905551110005", { city: "Istanbul", optIn: true, wroteAgo: 3 * DAY, blocked: true }); // in, blocked
  await person("Fatma", "+905551110006", { city: "Istanbul", optIn: true, wroteAgo: 29 * DAY, plan: "silver" }); // in
});
afterAll(() => app.close());

const segment = (name: string, filter: unknown = ISTANBUL) => app.request("POST", "/segments", { body: { name, filter } });
const idsOf = (body: { data: { id: string }[] }) => body.data.map((c) => c.id);

/** A POST /segments/count that must be a 422 with exactly these pointers. */
const invalid = (name: string, filter: unknown, pointers: string[]): Scenario => ({
  name: `422: ${name}`,
  method: "POST",
  url: "/segments/count",
  body: { filter },
  status: 422,
  contains: { error: { code: "VALIDATION_FAILED" } },
  check: (res) => expect(res.body.error.details.map((d: { pointer: string }) => d.pointer)).toEqual(pointers),
});
const nest = (depth: number): unknown => (depth === 0 ? { field: "blocked", op: "eq", value: false } : { not: nest(depth - 1) });

describe("POST /segments/count and the filter's checks", () => {
  runScenarios(
    () => app,
    [
      ...rowsOf("POST", "/segments/count", [
        {
          name: "the worked example: opted-in Istanbul customers who wrote in the last 30 days",
          body: { filter: ISTANBUL },
          status: 200,
          contains: { data: { count: 3 } },
        },
        {
          name: "any, not, in, custom fields",
          body: {
            filter: {
              any: [{ field: "customFields.plan", op: "in", value: ["gold", "silver"] }, { not: { field: "city", op: "in", value: ["Istanbul"] } }],
            },
          },
          status: 200,
          contains: { data: { count: 3 } }, // Ayse, Fatma (plan), Deniz (Ankara)
        },
        {
          name: "ne matches a contact without the fact",
          body: { filter: { field: "customFields.plan", op: "ne", value: "gold" } },
          status: 200,
          contains: { data: { count: 5 } },
        },
        {
          name: "blocked",
          body: { filter: { field: "blocked", op: "eq", value: true } },
          status: 200,
          contains: { data: { count: 1 } },
        },
        {
          name: "an absolute time",
          body: { filter: { field: "lastInboundAt.whatsapp", op: "lt", value: "2026-05-01T00:00:00Z" } },
          status: 200,
          contains: { data: { count: 1 } },
        },
        {
          name: "a channel without accounts' messages",
          body: { filter: { field: "lastInboundAt.telegram", op: "exists" } },
          status: 200,
          contains: { data: { count: 0 } },
        },
      ]),
      invalid("missing filter", undefined, ["/filter"]),
      invalid("not an object", [1], ["/filter"]),
      invalid("an unknown field", { all: [{ field: "nope", op: "eq", value: "x" }] }, ["/filter/all/0/field"]),
      invalid("an unknown custom field", { field: "customFields.tier", op: "eq", value: "x" }, ["/filter/field"]),
      invalid("an unknown channel", { field: "consent.fax", op: "eq", value: "opted_in" }, ["/filter/field"]),
      invalid(
        "an op the field does not take",
        {
          all: [
            { field: "city", op: "eq", value: "x" },
            { field: "city", op: "gt", value: "x" },
          ],
        },
        ["/filter/all/1/op"],
      ),
      invalid(
        "a value of the wrong type",
        {
          all: [
            { field: "city", op: "eq", value: "x" },
            { field: "city", op: "eq", value: "y" },
            { field: "blocked", op: "eq", value: "yes" },
          ],
        },
        ["/filter/all/2/value"],
      ),
      invalid("a select value as text passes, a number does not", { field: "customFields.plan", op: "eq", value: 3 }, ["/filter/value"]),
      invalid("a consent status that does not exist", { field: "consent.whatsapp", op: "in", value: ["opted_in", "maybe"] }, ["/filter/value/1"]),
      invalid("in takes an array", { field: "city", op: "in", value: "Istanbul" }, ["/filter/value"]),
      invalid("in takes at most 100 values", { field: "city", op: "in", value: Array.from({ length: 101 }, (_, i) => `c${i}`) }, ["/filter/value"]),
      invalid("a time that is neither a date-time nor a duration", { field: "createdAt", op: "gt", value: "last week" }, ["/filter/value"]),
      invalid("a missing value", { field: "city", op: "eq" }, ["/filter/value"]),
      invalid("exists takes a boolean", { field: "identity.email", op: "exists", value: "yes" }, ["/filter/value"]),
      invalid("an unknown property of a condition", { field: "city", op: "eq", value: "x", extra: 1 }, ["/filter/extra"]),
      invalid("two groups in one node", { all: [{ field: "blocked", op: "eq", value: true }], any: [] }, ["/filter/any"]),
      invalid("an empty group", { any: [] }, ["/filter/any"]),
      invalid("nesting deeper than 6", nest(7), ["/filter/not/not/not/not/not/not"]),
      invalid("more than 50 nodes", { any: Array.from({ length: 50 }, () => ({ field: "blocked", op: "eq", value: true })) }, ["/filter/any/49"]),
    ],
  );

  test("403 API_SCOPE_MISSING for a key without contacts scopes", async () => {
    const { key } = await app.newKey({ name: "messages", scopes: ["messages:send"] });
    for (const [method, url, body] of [
      ["POST", "/segments/count", { filter: ISTANBUL }],
      ["POST", "/segments", { name: "x", filter: ISTANBUL }],
      ["GET", "/segments", undefined],
    ] as const) {
      const res = await app.request(method, url, { key, body });
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("API_SCOPE_MISSING");
    }
  });
});

describe("saved segments", () => {
  test("create, get, list with a cursor, patch, delete; names unique; 404 for another company's", async () => {
    const a = await segment("Istanbul, active");
    expect(a.status).toBe(201);
    expect(a.body.data).toEqual({
      id: expect.any(String),
      name: "Istanbul, active",
      filter: ISTANBUL,
      createdAt: "2026-06-01T12:00:00.000Z",
      updatedAt: "2026-06-01T12:00:00.000Z",
    });
    const b = await segment("Gold", { field: "customFields.plan", op: "eq", value: "gold" });
    expect(b.status).toBe(201);

    const dup = await segment("Istanbul, active");
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: "CONFLICT", details: [{ pointer: "/name" }] });
    expect((await segment("   ")).body.error.details).toEqual([{ pointer: "/name", message: "must not be blank" }]);
    expect((await segment("Bad", { field: "city", op: "gt", value: "x" })).body.error.details[0].pointer).toBe("/filter/op");

    expect((await app.request("GET", `/segments/${a.body.data.id}`)).body.data).toEqual(a.body.data);
    const p1 = await app.request("GET", "/segments?limit=1");
    expect(idsOf(p1.body)).toEqual([b.body.data.id]);
    const p2 = await app.request("GET", `/segments?limit=1&cursor=${p1.body.page.nextCursor}`);
    expect(idsOf(p2.body)).toEqual([a.body.data.id]);
    expect(p2.body.page.nextCursor).toBeNull();
    expect((await app.request("GET", "/segments?cursor=bogus")).body.error.details[0].pointer).toBe("query:cursor");
    expect((await app.request("GET", "/segments?limit=0")).body.error.details[0].pointer).toBe("query:limit");

    app.clock.advance(60_000);
    const renamed = await app.request("PATCH", `/segments/${b.body.data.id}`, { body: { name: "Gold plan" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: "Gold plan", filter: b.body.data.filter, updatedAt: "2026-06-01T12:01:00.000Z" });
    const refiltered = await app.request("PATCH", `/segments/${b.body.data.id}`, { body: { filter: { field: "customFields.plan", op: "exists" } } });
    expect(refiltered.body.data).toMatchObject({ name: "Gold plan", filter: { field: "customFields.plan", op: "exists" } });
    expect((await app.request("PATCH", `/segments/${b.body.data.id}`, { body: { name: "Istanbul, active" } })).status).toBe(409);
    expect(
      (await app.request("PATCH", `/segments/${b.body.data.id}`, { body: { filter: { field: "plan", op: "exists" } } })).body.error.details[0].pointer,
    ).toBe("/filter/field");
    expect((await app.request("PATCH", `/segments/${b.body.data.id}`, { body: {} })).status).toBe(422);
    expect((await app.request("PATCH", "/segments/01900000-0000-7000-8000-000000000000", { body: { name: "x" } })).status).toBe(404);

    // Another company's key sees none of it.
    const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
    const { key } = await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "o", scopes: ["*"] });
    expect((await app.request("GET", `/segments/${a.body.data.id}`, { key })).status).toBe(404);
    expect((await app.request("GET", `/segments/${a.body.data.id}/contacts`, { key })).status).toBe(404);
    expect((await app.request("DELETE", `/segments/${a.body.data.id}`, { key })).status).toBe(404);
    expect((await app.request("GET", "/segments", { key })).body.data).toEqual([]);
    expect((await app.request("POST", "/segments/count", { key, body: { filter: ISTANBUL } })).body.data.count).toBe(0);

    expect((await app.request("DELETE", `/segments/${b.body.data.id}`)).body.data).toEqual({ id: b.body.data.id, deleted: true });
    expect((await app.request("GET", `/segments/${b.body.data.id}`)).status).toBe(404);
    expect((await app.request("DELETE", `/segments/${b.body.data.id}`)).status).toBe(404);
  });

  test("GET /segments/{id}/contacts: the members now, newest first, paged", async () => {
    const s = await segment("Istanbul members");
    const all = await app.request("GET", `/segments/${s.body.data.id}/contacts`);
    expect(all.status).toBe(200);
    expect(idsOf(all.body)).toEqual([who.Fatma, who.Emre, who.Ayse]);
    expect(all.body.data[0]).toMatchObject({ firstName: "Fatma", city: "Istanbul", consent: { whatsapp: { status: "opted_in" } } });
    const p1 = await app.request("GET", `/segments/${s.body.data.id}/contacts?limit=2`);
    expect(idsOf(p1.body)).toEqual([who.Fatma, who.Emre]);
    const p2 = await app.request("GET", `/segments/${s.body.data.id}/contacts?limit=2&cursor=${p1.body.page.nextCursor}`);
    expect(idsOf(p2.body)).toEqual([who.Ayse]);
    expect(p2.body.page.nextCursor).toBeNull();
    expect((await app.request("GET", "/segments/01900000-0000-7000-8000-000000000000/contacts")).status).toBe(404);
    // "The last 30 days" moves with the clock: two days on, Fatma (29 days) has left.
    app.clock.advance(2 * DAY);
    try {
      expect(idsOf((await app.request("GET", `/segments/${s.body.data.id}/contacts`)).body)).toEqual([who.Emre, who.Ayse]);
    } finally {
      app.clock.advance(-2 * DAY);
    }
  });
});

describe("campaign audiences: segment and filter", () => {
  const templateId = async () => (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;

  test("the estimate counts a segment and the same filter alike, on the verdict of §9", async () => {
    const s = await segment("Istanbul for the estimate");
    const body = { templateId: await templateId(), askValues: { "body.1": "friend" } };
    const bySegment = await app.request("POST", "/campaigns/estimate", { body: { ...body, audience: { type: "segment", segmentId: s.body.data.id } } });
    expect(bySegment.status).toBe(200);
    expect(bySegment.body.data).toMatchObject({
      matched: 3,
      sendable: 2,
      excluded: { noIdentity: 0, noConsent: 0, blocked: 1, outsideWindow: 0, noPriorConversation: 0 },
    });
    const byFilter = await app.request("POST", "/campaigns/estimate", { body: { ...body, audience: { type: "filter", filter: ISTANBUL } } });
    expect(byFilter.body.data).toEqual(bySegment.body.data);
    // Istanbul without the consent condition: Cem (opted out) is matched and excluded for consent.
    const wider = await app.request("POST", "/campaigns/estimate", {
      body: { ...body, audience: { type: "filter", filter: { field: "city", op: "eq", value: "Istanbul" } } },
    });
    expect(wider.body.data).toMatchObject({ matched: 5, sendable: 3, excluded: { noConsent: 1, blocked: 1 } });

    const unknown = await app.request("POST", "/campaigns/estimate", {
      body: { ...body, audience: { type: "segment", segmentId: "01900000-0000-7000-8000-000000000000" } },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.error.details).toEqual([{ pointer: "/audience/segmentId", message: "no such segment (GET /segments)" }]);
    const bad = await app.request("POST", "/campaigns/estimate", {
      body: { ...body, audience: { type: "filter", filter: { all: [{ field: "city", op: "lt", value: "x" }] } } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: { pointer: string }) => d.pointer)).toEqual(["/audience/filter/all/0/op"]);
  });

  test("a campaign with a segment audience sends to exactly the segment's eligible contacts", async () => {
    const s = await segment("Istanbul for the campaign");
    const res = await app.request("POST", "/campaigns", {
      body: { name: "Istanbul", templateId: await templateId(), askValues: { "body.1": "friend" }, audience: { type: "segment", segmentId: s.body.data.id } },
    });
    expect(res.status).toBe(201);
    expect(res.body.data.audience).toEqual({ type: "segment", segmentId: s.body.data.id });
    const id = res.body.data.id;
    // The segment changed after creation: the campaign keeps the filter it was created with.
    await app.request("PATCH", `/segments/${s.body.data.id}`, { body: { filter: { field: "city", op: "eq", value: "Ankara" } } });
    const { engine, service: campaigns } = modulesOf(app.deps).campaigns;
    const store = campaigns.store;
    while (!(await store.get(id))!.resolvedAt) await app.deps.db.unit(async () => engine.resolvePage((await store.get(id))!));
    const recipients = (await app.request("GET", `/campaigns/${id}/recipients?limit=200`)).body.data as {
      contactId: string;
      status: string;
      reason: string | null;
    }[];
    const sent = recipients.filter((r) => r.status !== "excluded").map((r) => r.contactId);
    expect(sent.sort()).toEqual([who.Ayse, who.Fatma].sort());
    expect(recipients.filter((r) => r.status === "excluded")).toEqual([expect.objectContaining({ contactId: who.Emre, reason: "blocked" })]);
    expect((await app.request("GET", `/campaigns/${id}`)).body.data.stats).toMatchObject({ matched: 3, sendable: 2 });
    // The fan-out: one message to each of the two, none to anyone else.
    await app.deps.db.unit(() => engine.sendBatch(id, 10));
    const after = (await app.request("GET", `/campaigns/${id}/recipients?limit=200`)).body.data as { contactId: string; messageId: string | null }[];
    const messaged = after.filter((r) => r.messageId).map((r) => r.contactId);
    expect(messaged.sort()).toEqual([who.Ayse, who.Fatma].sort());
    for (const r of after.filter((r) => r.messageId)) {
      const m = (await app.request("GET", `/messages/${r.messageId}`)).body.data;
      expect(m).toMatchObject({ contactId: r.contactId, campaignId: id });
    }
  });
});
