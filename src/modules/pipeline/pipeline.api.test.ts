/**
 * The pipeline API through the real app: every route with and without the license, scopes, tenancy (404 for
 * foreign ids), validation naming the field, filters and cursors, stage history, won/lost times, events,
 * and what deleting a contact does to its records.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { signLicense } from "../../../scripts/sign-license";
import { eventsOf, inbound } from "../../../test/helpers/messaging";
import { runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createApiKey } from "../api-keys/api-keys.service";
import { createCompany } from "../companies/companies.service";
import { stageIdOf } from "./pipeline.config";

const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");
const FUTURE = "2099-01-01T00:00:00.000Z";
const S = (key: string) => stageIdOf(key);

let app: TestApp;
let contactA: string;
let contactB: string;
let conversationA: string;
let readKey: string;
let noScopeKey: string;
let acmeKey: string;
let acmeRecord: string;
let acmeTask: string;
let acmeContact: string;
let ownRecord: string;

const writeLicense = (o: { company?: string; modules?: string[]; expiresAt?: string } = {}) =>
  writeFileSync(
    app.config.license.file,
    signLicense({ company: o.company ?? "default", modules: o.modules ?? ["pipeline", "sources"], expiresAt: o.expiresAt ?? FUTURE, privateKey: devKey }),
  );

const contact = async (phone: string, key?: string) => {
  const r = await app.request("POST", "/contacts", { body: { firstName: "Ada", identities: [{ channel: "whatsapp", value: phone }] }, key });
  if (r.status >= 300) throw new Error(JSON.stringify(r.body));
  return r.body.data.contact.id as string;
};
const record = async (body: Record<string, unknown>, key?: string) => {
  const r = await app.request("POST", "/records", { body: { title: "Deal", contactId: contactA, ...body }, key });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.data;
};

beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-01-05T09:00:00.000Z"), config: { rate_limit: { requests_per_second: 10000, burst: 10000 } } });
  writeLicense();
  contactA = await contact("+14155550101");
  contactB = await contact("+14155550102");
  await inbound(app, "whatsapp", { phone: "+14155550101" });
  conversationA = (await app.request("GET", `/conversations?contactId=${contactA}`)).body.data.find((c: { contactId: string }) => c.contactId === contactA).id;
  readKey = (await app.newKey({ name: "reader", scopes: ["pipeline:read"] })).key;
  noScopeKey = (await app.newKey({ name: "contacts-only", scopes: ["contacts:read"] })).key;
  // Another company with its own license-independent data: its ids must be 404 for the default company.
  const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "acme", name: "Acme" });
  acmeKey = (await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "acme-admin", scopes: ["*"] })).key;
  writeLicense({ company: "acme" });
  acmeContact = await contact("+14155550199", acmeKey);
  acmeRecord = (await record({ contactId: acmeContact }, acmeKey)).id;
  acmeTask = (await app.request("POST", "/tasks", { body: { title: "x", recordId: acmeRecord }, key: acmeKey })).body.data.id;
  writeLicense();
  ownRecord = (await record({})).id;
});
afterAll(() => app.close());

describe("GET /pipeline", () => {
  test("the default sales template: terms and ordered stages with kind and probability", async () => {
    const r = await app.request("GET", "/pipeline");
    expect(r.status).toBe(200);
    expect(r.body.data.template).toBe("sales");
    expect(r.body.data.terms).toEqual({ record: "Deal", records: "Deals", stage: "Stage", stages: "Stages" });
    expect(r.body.data.stages.map((s: { key: string }) => s.key)).toEqual(["lead", "qualified", "proposal", "negotiation", "won", "lost"]);
    expect(r.body.data.stages[0]).toEqual({ id: S("lead"), key: "lead", name: "Lead", order: 1, kind: "open", probability: 10 });
    expect(r.body.data.stages[4]).toMatchObject({ kind: "won", probability: 100 });
    expect(r.body.data.stages[5]).toMatchObject({ kind: "lost", probability: 0 });
  });
});

describe("records", () => {
  test("create: first stage by default, money value in the billing currency, a history row by the key's name, record.created", async () => {
    const r = await app.request("POST", "/records", {
      body: {
        title: "20 seats",
        contactId: contactA,
        conversationId: conversationA,
        value: "1500.5",
        ownerId: "agent-7",
        expectedCloseDate: "2026-02-28",
        customFields: { seats: 20 },
      },
    });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({
      title: "20 seats",
      contactId: contactA,
      contactDeleted: false,
      conversationId: conversationA,
      stageId: S("lead"),
      status: "open",
      value: { amount: "1500.500000", unit: "USD" },
      ownerId: "agent-7",
      expectedCloseDate: "2026-02-28",
      customFields: { seats: 20 },
      stageEnteredAt: "2026-01-05T09:00:00.000Z",
      wonAt: null,
      lostAt: null,
    });
    const detail = await app.request("GET", `/records/${r.body.data.id}`);
    expect(detail.body.data.history).toEqual([{ fromStageId: null, toStageId: S("lead"), at: "2026-01-05T09:00:00.000Z", by: "admin", reason: null }]);
    expect(detail.body.data.tasks).toEqual([]);
    expect(eventsOf(app, "record.created").at(-1)!.data.record.id).toBe(r.body.data.id);
  });

  test("move: history with who/when/why; won sets status and wonAt, lost sets lostAt, back to open clears them; time in stage restarts", async () => {
    const rec = await record({});
    app.clock.advance(3_600_000);
    const won = await app.request("POST", `/records/${rec.id}/move`, {
      body: { stageId: S("won"), reason: "signed" },
      key: (await app.newKey({ name: "crm", scopes: ["pipeline:write", "pipeline:read"] })).key,
    });
    expect(won.status).toBe(200);
    expect(won.body.data).toMatchObject({
      stageId: S("won"),
      status: "won",
      wonAt: "2026-01-05T10:00:00.000Z",
      lostAt: null,
      stageEnteredAt: "2026-01-05T10:00:00.000Z",
    });
    const moved = eventsOf(app, "record.moved").at(-1)!.data;
    expect(moved).toMatchObject({ fromStageId: S("lead"), toStageId: S("won"), reason: "signed", by: "crm", record: { status: "won" } });

    app.clock.advance(60_000);
    const lost = await app.request("POST", `/records/${rec.id}/move`, { body: { stageId: S("lost") } });
    expect(lost.body.data).toMatchObject({ status: "lost", wonAt: null, lostAt: "2026-01-05T10:01:00.000Z" });
    const back = await app.request("POST", `/records/${rec.id}/move`, { body: { stageId: S("proposal"), reason: "reopened" } });
    expect(back.body.data).toMatchObject({ status: "open", wonAt: null, lostAt: null });

    const detail = await app.request("GET", `/records/${rec.id}`);
    expect(
      detail.body.data.history.map((h: { fromStageId: string; toStageId: string; by: string; reason: string }) => [h.fromStageId, h.toStageId, h.by, h.reason]),
    ).toEqual([
      [null, S("lead"), "admin", null],
      [S("lead"), S("won"), "crm", "signed"],
      [S("won"), S("lost"), "admin", null],
      [S("lost"), S("proposal"), "admin", "reopened"],
    ]);
  });

  test("PATCH changes fields (not the stage) and emits record.updated; null clears", async () => {
    const rec = await record({ value: "10" });
    const r = await app.request("PATCH", `/records/${rec.id}`, { body: { title: "Renamed", value: null, ownerId: "agent-9", customFields: { a: "b" } } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ title: "Renamed", value: null, ownerId: "agent-9", customFields: { a: "b" }, stageId: S("lead") });
    expect(eventsOf(app, "record.updated").at(-1)!.data.record.title).toBe("Renamed");
  });

  test("list: filters by stageId, status, contactId, ownerId; newest first with a cursor", async () => {
    const a = await record({ contactId: contactB, ownerId: "pager", stageId: S("qualified") });
    const b = await record({ contactId: contactB, ownerId: "pager", stageId: S("qualified") });
    const c = await record({ contactId: contactB, ownerId: "pager", stageId: S("qualified") });
    const p1 = await app.request("GET", `/records?stageId=${S("qualified")}&ownerId=pager&limit=2`);
    expect(p1.body.data.map((r: { id: string }) => r.id)).toEqual([c.id, b.id]);
    expect(p1.body.page.limit).toBe(2);
    const p2 = await app.request("GET", `/records?stageId=${S("qualified")}&ownerId=pager&limit=2&cursor=${p1.body.page.nextCursor}`);
    expect(p2.body.data.map((r: { id: string }) => r.id)).toEqual([a.id]);
    expect(p2.body.page.nextCursor).toBeNull();

    const byContact = await app.request("GET", `/records?contactId=${contactB}`);
    expect(byContact.body.data.every((r: { contactId: string }) => r.contactId === contactB)).toBe(true);
    expect(byContact.body.data).toHaveLength(3);
    await app.request("POST", `/records/${a.id}/move`, { body: { stageId: S("won") } });
    const wonList = await app.request("GET", `/records?status=won&contactId=${contactB}`);
    expect(wonList.body.data.map((r: { id: string }) => r.id)).toEqual([a.id]);
    // Another company's records never show up.
    const all = await app.request("GET", "/records?limit=200");
    expect(all.body.data.some((r: { id: string }) => r.id === acmeRecord)).toBe(false);
  });
});

describe("deleting a contact keeps its records readable, marked contactDeleted", () => {
  test("records and tasks stay; contactDeleted is true; new records for it are refused", async () => {
    const gone = await contact("+14155550177");
    const rec = await record({ contactId: gone });
    const task = await app.request("POST", "/tasks", { body: { title: "follow up", recordId: rec.id } });
    expect(task.body.data.contactId).toBe(gone);
    expect((await app.request("DELETE", `/contacts/${gone}`)).status).toBe(200);
    const detail = await app.request("GET", `/records/${rec.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.data).toMatchObject({ contactId: gone, contactDeleted: true, tasks: [{ id: task.body.data.id }] });
    expect((await app.request("GET", `/records?contactId=${gone}`)).body.data[0].contactDeleted).toBe(true);
    const again = await app.request("POST", "/records", { body: { title: "x", contactId: gone } });
    expect(again.status).toBe(422);
    expect(again.body.error.details).toEqual([{ pointer: "/contactId", message: "no such contact" }]);
  });
});

describe("tasks", () => {
  test("create on a record takes the record's contact; list filters status, recordId, contactId, dueBefore; PATCH completes; DELETE is 204", async () => {
    const rec = await record({ contactId: contactB });
    const t1 = await app.request("POST", "/tasks", {
      body: { title: "Call", recordId: rec.id, dueAt: "2026-01-06T10:00:00Z", assigneeId: "agent-7", notes: "ask about seats" },
    });
    expect(t1.status).toBe(201);
    expect(t1.body.data).toMatchObject({
      title: "Call",
      recordId: rec.id,
      contactId: contactB,
      status: "open",
      dueAt: "2026-01-06T10:00:00.000Z",
      remindAt: null,
      completedAt: null,
      assigneeId: "agent-7",
    });
    const t2 = await app.request("POST", "/tasks", { body: { title: "Send offer", recordId: rec.id, dueAt: "2026-01-09T10:00:00Z" } });
    const t3 = await app.request("POST", "/tasks", { body: { title: "Standalone", contactId: contactA } });
    expect(eventsOf(app, "task.created").at(-1)!.data.task.id).toBe(t3.body.data.id);

    const ids = (r: { body: { data: { id: string }[] } }) => r.body.data.map((x) => x.id);
    expect(ids(await app.request("GET", `/tasks?recordId=${rec.id}`))).toEqual([t2.body.data.id, t1.body.data.id]);
    expect(ids(await app.request("GET", `/tasks?recordId=${rec.id}&dueBefore=2026-01-07T00:00:00Z`))).toEqual([t1.body.data.id]);
    expect(ids(await app.request("GET", `/tasks?contactId=${contactA}`))).toContain(t3.body.data.id);

    const done = await app.request("PATCH", `/tasks/${t1.body.data.id}`, { body: { status: "done" } });
    expect(done.body.data).toMatchObject({ status: "done", completedAt: app.clock.now().toISOString() });
    expect(eventsOf(app, "task.completed").at(-1)!.data.task.id).toBe(t1.body.data.id);
    expect(ids(await app.request("GET", `/tasks?recordId=${rec.id}&status=done`))).toEqual([t1.body.data.id]);
    expect(ids(await app.request("GET", `/tasks?recordId=${rec.id}&status=open`))).toEqual([t2.body.data.id]);

    const p1 = await app.request("GET", `/tasks?recordId=${rec.id}&limit=1`);
    const p2 = await app.request("GET", `/tasks?recordId=${rec.id}&limit=1&cursor=${p1.body.page.nextCursor}`);
    expect([...ids(p1), ...ids(p2)]).toEqual([t2.body.data.id, t1.body.data.id]);

    const del = await app.request("DELETE", `/tasks/${t2.body.data.id}`);
    expect(del.status).toBe(204);
    expect((await app.request("DELETE", `/tasks/${t2.body.data.id}`)).status).toBe(404);
    expect((await app.request("GET", `/records/${rec.id}`)).body.data.tasks.map((t: { id: string }) => t.id)).toEqual([t1.body.data.id]);
  });
});

describe("events", () => {
  test("GET /webhooks/event-types lists the pipeline events with examples", async () => {
    const r = await app.request("GET", "/webhooks/event-types");
    const names = r.body.data.map((e: { name: string }) => e.name);
    for (const n of ["record.created", "record.updated", "record.moved", "task.created", "task.due", "task.completed"]) expect(names).toContain(n);
    expect(r.body.data.find((e: { name: string }) => e.name === "record.moved").example).toMatchObject({
      record: { status: "won" },
      reason: "signed",
      by: "crm",
    });
  });

  test("a webhook endpoint can subscribe to record.* and task.*", async () => {
    const r = await app.request("POST", "/webhooks", { body: { url: "https://erp.example.com/h", events: ["record.*", "task.due"] } });
    expect(r.status).toBe(201);
    expect(r.body.data.events).toEqual(["record.*", "task.due"]);
  });
});

describe("task fields", () => {
  test("PATCH title, notes, dueAt, assigneeId; null clears", async () => {
    const id = (await app.request("POST", "/tasks", { body: { title: "a", notes: "n", dueAt: "2026-02-01T10:00:00Z", assigneeId: "x" } })).body.data.id;
    const r = await app.request("PATCH", `/tasks/${id}`, { body: { title: "b", notes: null, dueAt: "2026-02-02T10:00:00+02:00", assigneeId: null } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ title: "b", notes: null, dueAt: "2026-02-02T08:00:00.000Z", assigneeId: null, status: "open" });
  });
});

describe("GET /me lists licensed modules with expiry", () => {
  test("licensed, not listed, expired", async () => {
    writeLicense({ modules: ["pipeline"] });
    const me = await app.request("GET", "/me");
    expect(me.body.data.licensedModules).toEqual([
      { module: "pipeline", licensed: true, code: null, expiresAt: FUTURE },
      { module: "sources", licensed: false, code: "FEATURE_NOT_LICENSED", expiresAt: FUTURE },
    ]);
    writeLicense({ expiresAt: "2020-01-01T00:00:00.000Z" });
    expect((await app.request("GET", "/me")).body.data.licensedModules[0]).toEqual({
      module: "pipeline",
      licensed: false,
      code: "LICENSE_EXPIRED",
      expiresAt: "2020-01-01T00:00:00.000Z",
    });
    rmSync(app.config.license.file);
    expect((await app.request("GET", "/me")).body.data.licensedModules[0]).toEqual({
      module: "pipeline",
      licensed: false,
      code: "LICENSE_NOT_FOUND",
      expiresAt: null,
    });
    writeLicense();
  });
});

// ---------------------------------------------------------------------------------------------------- tables

const ID = "01970f40-0000-7000-8000-000000000000";
/** Every route once, with a body that would pass validation. */
const ROUTES: { method: string; label: string; url: () => string; body?: () => unknown; write: boolean; foreign?: boolean }[] = [
  { method: "GET", label: "/pipeline", url: () => "/pipeline", write: false },
  { method: "GET", label: "/records", url: () => "/records", write: false },
  { method: "POST", label: "/records", url: () => "/records", body: () => ({ title: "t", contactId: contactA }), write: true },
  { method: "GET", label: "/records/{id}", url: () => `/records/${acmeRecord}`, write: false, foreign: true },
  { method: "PATCH", label: "/records/{id}", url: () => `/records/${acmeRecord}`, body: () => ({ title: "t" }), write: true, foreign: true },
  { method: "POST", label: "/records/{id}/move", url: () => `/records/${acmeRecord}/move`, body: () => ({ stageId: S("won") }), write: true, foreign: true },
  { method: "GET", label: "/tasks", url: () => "/tasks", write: false },
  { method: "POST", label: "/tasks", url: () => "/tasks", body: () => ({ title: "t" }), write: true },
  { method: "PATCH", label: "/tasks/{id}", url: () => `/tasks/${acmeTask}`, body: () => ({ title: "t" }), write: true, foreign: true },
  { method: "DELETE", label: "/tasks/{id}", url: () => `/tasks/${acmeTask}`, write: true, foreign: true },
];

const LICENSE_CASES: { name: string; setup: () => void; code: string }[] = [
  { name: "no license file", setup: () => rmSync(app.config.license.file, { force: true }), code: "LICENSE_NOT_FOUND" },
  { name: "expired license", setup: () => writeLicense({ expiresAt: "2025-12-31T00:00:00.000Z" }), code: "LICENSE_EXPIRED" },
  { name: "another company's license", setup: () => writeLicense({ company: "acme" }), code: "LICENSE_NOT_FOUND" },
  { name: "module not listed", setup: () => writeLicense({ modules: ["sources"] }), code: "FEATURE_NOT_LICENSED" },
];

/** A scenario whose url, body and key are read when it runs (ids and keys exist only after beforeAll). */
const scenario = (
  name: string,
  r: (typeof ROUTES)[number],
  { key, ...rest }: Omit<Partial<Scenario>, "key"> & { status: number; key?: () => string },
): Scenario => {
  const s: Scenario = { name, method: r.method, url: "", ...rest };
  if (key) Object.defineProperty(s, "key", { get: key, enumerable: true });
  Object.defineProperty(s, "url", { get: r.url, enumerable: true });
  if (r.body) Object.defineProperty(s, "body", { get: r.body, enumerable: true });
  return s;
};

describe("license: every route answers the 403 that applies (checked per request)", () => {
  runScenarios(
    () => app,
    [
      ...ROUTES.flatMap((r) =>
        LICENSE_CASES.map((c) =>
          scenario(`${r.method} ${r.label} — ${c.name} → 403 ${c.code}`, r, {
            setup: c.setup,
            status: 403,
            contains: { error: { code: c.code } },
          }),
        ),
      ),
      { name: "a valid license again opens the routes (no restart)", method: "GET", url: "/pipeline", status: 200, setup: () => writeLicense() },
    ],
  );
});

describe("scopes and tenancy", () => {
  runScenarios(
    () => app,
    [
      ...ROUTES.map((r) =>
        scenario(`${r.method} ${r.label} without pipeline scopes → 403 API_SCOPE_MISSING`, r, {
          key: () => noScopeKey,
          status: 403,
          contains: { error: { code: "API_SCOPE_MISSING", message: `This operation needs the scope pipeline:${r.write ? "write" : "read"}` } },
        }),
      ),
      ...ROUTES.filter((r) => r.write).map((r) =>
        scenario(`${r.method} ${r.label} with pipeline:read only → 403 API_SCOPE_MISSING`, r, {
          key: () => readKey,
          status: 403,
          contains: { error: { code: "API_SCOPE_MISSING" } },
        }),
      ),
      ...ROUTES.filter((r) => r.foreign).map((r) =>
        scenario(`${r.method} ${r.label} of another company → 404`, r, { status: 404, contains: { error: { code: "NOT_FOUND" } } }),
      ),
      {
        name: "no key → 401 before the license check",
        method: "GET",
        url: "/records",
        key: null,
        status: 401,
        contains: { error: { code: "API_KEY_INVALID" } },
      },
      { name: "unknown record id → 404", method: "GET", url: `/records/${ID}`, status: 404 },
      { name: "unknown task id → 404", method: "PATCH", url: `/tasks/${ID}`, body: { title: "x" }, status: 404 },
    ],
  );
  test("pipeline:read reads", async () => {
    expect((await app.request("GET", "/records", { key: readKey })).status).toBe(200);
    expect((await app.request("GET", "/tasks", { key: readKey })).status).toBe(200);
  });
});

describe("validation: 422 naming the field", () => {
  const v = (name: string, method: string, url: string | (() => string), body: unknown, pointer: string): Scenario => {
    const s: Scenario = { name: `${name} → 422 ${pointer}`, method, url: "", status: 422, contains: { error: { code: "VALIDATION_FAILED" } } };
    Object.defineProperty(s, "url", { get: typeof url === "string" ? () => url : url, enumerable: true });
    Object.defineProperty(s, "body", { get: typeof body === "function" ? (body as () => unknown) : () => body, enumerable: true });
    s.check = (res) => expect(res.body.error.details.map((d: { pointer: string }) => d.pointer)).toContain(pointer);
    return s;
  };
  runScenarios(
    () => app,
    [
      v("record without title", "POST", "/records", { contactId: ID }, "/title"),
      v("record with an unknown contact", "POST", "/records", { title: "t", contactId: ID }, "/contactId"),
      v("record with another company's contact", "POST", "/records", () => ({ title: "t", contactId: acmeContact }), "/contactId"),
      v("record with an unknown stage", "POST", "/records", () => ({ title: "t", contactId: contactA, stageId: ID }), "/stageId"),
      v("record with a bad value", "POST", "/records", { title: "t", contactId: ID, value: "12,50" }, "/value"),
      v("record with a negative value", "POST", "/records", { title: "t", contactId: ID, value: "-5" }, "/value"),
      v("record with a value beyond 999999999.999999", "POST", "/records", { title: "t", contactId: ID, value: "1000000000" }, "/value"),
      v(
        "record with an impossible date",
        "POST",
        "/records",
        () => ({ title: "t", contactId: contactA, expectedCloseDate: "2026-02-30" }),
        "/expectedCloseDate",
      ),
      v("record with an unknown conversation", "POST", "/records", () => ({ title: "t", contactId: contactA, conversationId: ID }), "/conversationId"),
      v(
        "record with another contact's conversation",
        "POST",
        "/records",
        () => ({ title: "t", contactId: contactB, conversationId: conversationA }),
        "/conversationId",
      ),
      v("PATCH record with stageId (use move)", "PATCH", () => `/records/${ownRecord}`, { stageId: S("won") }, "/stageId"),
      v("move to an unknown stage", "POST", () => `/records/${ownRecord}/move`, { stageId: "nope" }, "/stageId"),
      v("move without stageId", "POST", () => `/records/${ownRecord}/move`, {}, "/stageId"),
      v("task without title", "POST", "/tasks", {}, "/title"),
      v("task with a bad remindAt", "POST", "/tasks", { title: "t", remindAt: "tomorrow" }, "/remindAt"),
      v("task with another company's record", "POST", "/tasks", () => ({ title: "t", recordId: acmeRecord }), "/recordId"),
      v("task with a contact that is not the record's", "POST", "/tasks", () => ({ title: "t", recordId: ownRecord, contactId: contactB }), "/contactId"),
      v("task status other than open/done", "PATCH", () => `/tasks/${ID}`, { status: "archived" }, "/status"),
      v("records ?status=", "GET", "/records?status=pending", undefined, "query:status"),
      v("records ?stageId= unknown", "GET", "/records?stageId=nope", undefined, "query:stageId"),
      v("records ?limit=0", "GET", "/records?limit=0", undefined, "query:limit"),
      v("records ?cursor=garbage", "GET", "/records?cursor=%%%", undefined, "query:cursor"),
      v("tasks ?dueBefore=", "GET", "/tasks?dueBefore=soon", undefined, "query:dueBefore"),
      v("tasks ?status=", "GET", "/tasks?status=late", undefined, "query:status"),
    ],
  );
  test("unknown body fields are dropped, as everywhere in the API", async () => {
    const r = await app.request("POST", "/records", { body: { title: "t", contactId: contactA, status: "won", wonAt: "2020-01-01T00:00:00Z" } });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ status: "open", wonAt: null });
  });
  test("moving to the stage the record is in → 409 CONFLICT", async () => {
    const rec = await record({});
    const r = await app.request("POST", `/records/${rec.id}/move`, { body: { stageId: S("lead") } });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("CONFLICT");
  });
  test("Idempotency-Key replays a record creation", async () => {
    const h = { "idempotency-key": "rec-create-1" };
    const a = await app.request("POST", "/records", { body: { title: "Once", contactId: contactA }, headers: h });
    const b = await app.request("POST", "/records", { body: { title: "Once", contactId: contactA }, headers: h });
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.body.data.id).toBe(a.body.data.id);
  });
});

describe("no input of any shape produces a 500 (licensed, so the handlers run)", () => {
  test("hostile bodies, path values and queries on every pipeline operation", async () => {
    writeLicense();
    const spec = (await app.request("GET", "/openapi.json", { key: null })).body;
    const ops = Object.entries(spec.paths as Record<string, Record<string, unknown>>)
      .filter(([path]) => /\/(pipeline|records|tasks)\b/.test(path))
      .flatMap(([path, o]) =>
        Object.keys(o)
          .filter((m) => ["get", "post", "patch", "delete"].includes(m))
          .map((m) => ({ method: m.toUpperCase(), path })),
      );
    expect(ops).toHaveLength(10);
    const bodies = [
      undefined,
      "",
      "null",
      "[]",
      "{",
      '{"__proto__": {"x": 1}}',
      JSON.stringify({ title: 5, contactId: [], value: "1e9", customFields: { a: { b: 1 } }, remindAt: "2026-13-45T99:00:00Z", stageId: null, status: "done" }),
      JSON.stringify({ title: "t", contactId: contactA, dueAt: "0000-01-01T00:00:00Z", remindAt: "9999-12-31T23:59:59Z", value: "999999999999.999999" }),
    ];
    const values = ["nope", "%00", "x".repeat(2000), "'; DROP TABLE pipeline_records; --", ownRecord];
    const queries = ["", "?limit=abc&cursor=%%%", "?cursor=eyJ4Ijox", "?stageId=&status=[]&dueBefore=yesterday&ownerId=%00"];
    const failures: string[] = [];
    for (const op of ops)
      for (const value of op.path.includes("{") ? values : [""])
        for (const q of queries)
          for (const body of op.method === "GET" || op.method === "DELETE" ? [undefined] : bodies) {
            const path = op.path.replace(/\{[^}]+\}/g, encodeURIComponent(value)).replace(/^\/api\/public\/v1/, "");
            const res = await app.request(op.method, `${path}${q}`, { raw: body, headers: body !== undefined ? { "content-type": "application/json" } : {} });
            if (res.status >= 500 || (res.status >= 400 && !res.body?.error?.code))
              failures.push(`${op.method} ${path}${q} ${String(body).slice(0, 40)} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
          }
    expect(failures.slice(0, 5)).toEqual([]);
  }, 60_000);
});
