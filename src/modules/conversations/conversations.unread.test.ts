/** Unread counts on conversations: counted by inbound, read by an agent's reply or POST /conversations/{id}/read. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { inbound } from "../../../test/helpers/messaging";
import { createCompany } from "../companies/companies.service";
import { createApiKey } from "../api-keys/api-keys.service";

const onPostgres = process.env.SWITCHBOARD_TEST_ENGINE === "postgres";
let app: TestApp;
/** Conversation ids by the contact's phone. */
const conv: Record<string, string> = {};
const get = async (id: string, key?: string) => (await app.request("GET", `/conversations/${id}`, { key })).body.data;

beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
  // Three contacts write in: A twice, B once, C once; C's then answered by an agent.
  for (const [phone, n] of [
    ["+14155550401", 2],
    ["+14155550402", 1],
    ["+14155550403", 1],
  ] as const) {
    for (let i = 0; i < n; i++) await inbound(app, "whatsapp", { phone }, `hello ${i}`, 60_000, `${phone}-${i}`);
    conv[phone] = (
      await app.request("GET", `/conversations?contactId=${(await app.request("GET", `/contacts?q=${encodeURIComponent(phone)}`)).body.data[0].id}`)
    ).body.data[0].id;
  }
  const r = await app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550403" }, type: "text", text: "answered" } });
  expect(r.status).toBe(202);
});
afterAll(() => app.close());

test("inbound messages count; an agent's reply reads them", async () => {
  expect((await get(conv["+14155550401"]!)).unreadCount).toBe(2);
  expect((await get(conv["+14155550402"]!)).unreadCount).toBe(1);
  expect((await get(conv["+14155550403"]!)).unreadCount).toBe(0);
});

test("?unread=true lists the unread ones, ?unread=false the others; 422 for anything else", async () => {
  const ids = async (q: string) => (await app.request("GET", `/conversations?${q}`)).body.data.map((c: { id: string }) => c.id);
  expect(await ids("unread=true")).toEqual([conv["+14155550402"], conv["+14155550401"]]);
  expect(await ids("unread=false")).toEqual([conv["+14155550403"]]);
  const bad = await app.request("GET", "/conversations?unread=yes");
  expect(bad.status).toBe(422);
  expect(bad.body.error.details[0].pointer).toBe("query:unread");
});

test("order=unread_first: unread newest first, then the read ones, through the cursor one by one", async () => {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r: { body: any } = await app.request("GET", `/conversations?order=unread_first&limit=1${cursor ? `&cursor=${cursor}` : ""}`);
    seen.push(...r.body.data.map((c: { id: string }) => c.id));
    cursor = r.body.page.nextCursor;
  } while (cursor);
  expect(seen).toEqual([conv["+14155550402"], conv["+14155550401"], conv["+14155550403"]]);
  const all = await app.request("GET", "/conversations?order=unread_first&limit=2");
  expect(all.body.data.map((c: any) => c.unreadCount)).toEqual([1, 2]);
  const foreign = await app.request("GET", `/conversations?order=unread_first&cursor=${Buffer.from('["x"]').toString("base64url")}`);
  expect(foreign.body.error.details[0].pointer).toBe("query:cursor");
});

test("POST /conversations/{id}/read: 0 unread, idempotent, conversations:write, another company's is 404", async () => {
  const id = conv["+14155550401"]!;
  const { key: reader } = await app.newKey({ name: "reader", scopes: ["conversations:read"] });
  expect((await app.request("POST", `/conversations/${id}/read`, { key: reader })).body.error.code).toBe("API_SCOPE_MISSING");
  const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
  const other = (await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "b", scopes: ["*"] })).key;
  expect((await app.request("POST", `/conversations/${id}/read`, { key: other })).status).toBe(404);
  expect((await app.request("GET", "/conversations?unread=true", { key: other })).body.data).toEqual([]);
  for (let i = 0; i < 2; i++) {
    const r = await app.request("POST", `/conversations/${id}/read`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id, unreadCount: 0 });
  }
  await inbound(app, "whatsapp", { phone: "+14155550401" }, "again", 1000, "again");
  expect((await get(id)).unreadCount).toBe(1);
});

test.skipIf(onPostgres)("the unread filter, as the store says it, searches the partial index (SQLite's plan)", () => {
  const plan = app.deps.db.$client.prepare(
    "EXPLAIN QUERY PLAN SELECT * FROM conversations WHERE company_id = ? AND unread_count > 0 AND id < ? ORDER BY id DESC LIMIT 5",
  );
  const detail = (plan.all("c", "x") as { detail: string }[]).map((d) => d.detail).join("; ");
  plan.finalize();
  expect(detail).toBe("SEARCH conversations USING INDEX conversations_unread_idx (company_id=? AND id<?)");
});
