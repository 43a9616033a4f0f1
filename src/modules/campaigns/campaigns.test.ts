/** /campaigns through the real app: every route and error, the estimate per channel, the engine end to end. */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { ACCOUNTS, createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { rowsOf, runScenarios } from "../../../test/helpers/scenarios";
import { eventsOf, inbound, type ChannelName } from "../../../test/helpers/messaging";
import { applyProviderStatus } from "../messages/messages.reports";
import { modulesOf } from "../../assembly";
import { createApiKey } from "../api-keys/api-keys.service";
import { createCompany } from "../companies/companies.service";

const HOUR = 3_600_000;
const CHANNELS = Object.keys(ACCOUNTS) as ChannelName[];

/** hello_world of a channel's sandbox account. */
async function templateIdOf(app: TestApp, channel: ChannelName): Promise<string> {
  const res = await app.request("GET", `/templates?channel=${channel}`);
  return res.body.data.find((t: { name: string }) => t.name === "hello_world").id;
}

const addressOf = (channel: ChannelName, n: string) =>
  channel === "whatsapp" ? { phone: `+1415555${n.padStart(4, "0")}` } : channel === "email" ? { email: `p${n}@example.com` } : { handle: `${channel}_${n}` };
const identityOf = (channel: ChannelName, n: string) => ({ channel, value: Object.values(addressOf(channel, n))[0]! });

/**
 * A contact on `channel`: optionally wrote in `wroteAgo` ms ago (sandbox hook), tagged, opted in or not,
 * blocked or not. `identity: false` gives it only an identity on another channel.
 */
async function person(
  app: TestApp,
  channel: ChannelName,
  n: string,
  o: {
    tag: string;
    wroteAgo?: number;
    optIn?: boolean;
    blocked?: boolean;
    identity?: boolean;
    firstName?: string | null;
    customFields?: Record<string, unknown>;
  },
): Promise<string> {
  if (o.wroteAgo !== undefined) await inbound(app, channel, addressOf(channel, n), "hi", o.wroteAgo);
  const other: ChannelName = channel === "email" ? "telegram" : "email";
  const identities = o.identity === false ? [identityOf(other, `9${n}`)] : [identityOf(channel, n)];
  const res = await app.request("POST", "/contacts", {
    body: { identities, tags: [o.tag], optIn: o.optIn ?? true, firstName: o.firstName === undefined ? `P${n}` : o.firstName, customFields: o.customFields },
  });
  if (res.status >= 300) throw new Error(JSON.stringify(res.body));
  const id = res.body.data.contact.id;
  if (o.blocked) await app.request("PATCH", `/contacts/${id}`, { body: { blocked: true } });
  return id;
}

const zero = { noIdentity: 0, noConsent: 0, blocked: 0, outsideWindow: 0, noPriorConversation: 0 };

describe("POST /campaigns/estimate: a mixed audience on each channel adds up", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
  });
  afterAll(() => app.close());

  // Per channel: who is in the audience, and under which reason each must be counted.
  const expected: Record<ChannelName, { sendable: number; excluded: typeof zero }> = {
    // recent writer ✓, never wrote ✓ (templates open the window), wrote 30 h ago ✓
    whatsapp: { sendable: 3, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1 } },
    // never wrote → outsideWindow (Meta's 24 h applies to templates), 30 h ago → outsideWindow
    instagram: { sendable: 1, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1, outsideWindow: 2 } },
    messenger: { sendable: 1, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1, outsideWindow: 2 } },
    // the contact must start: never wrote → noPriorConversation; 30 h ago is fine (no timed window)
    x: { sendable: 2, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1, noPriorConversation: 1 } },
    telegram: { sendable: 2, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1, noPriorConversation: 1 } },
    // 48 h window: 30 h ago is inside it; never wrote → noPriorConversation
    tiktok: { sendable: 2, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1, noPriorConversation: 1 } },
    email: { sendable: 3, excluded: { ...zero, noIdentity: 1, noConsent: 1, blocked: 1 } },
  };

  for (const channel of CHANNELS)
    test(channel, async () => {
      const tag = `mix-${channel}`;
      const ids = [
        await person(app, channel, "1", { tag, wroteAgo: HOUR }),
        await person(app, channel, "2", { tag }),
        await person(app, channel, "3", { tag, wroteAgo: 30 * HOUR }),
        await person(app, channel, "4", { tag, wroteAgo: HOUR, optIn: false }),
        await person(app, channel, "5", { tag, wroteAgo: HOUR, blocked: true }),
        await person(app, channel, "6", { tag, identity: false }),
      ];
      const estimate = (audience: object) =>
        app.request("POST", "/campaigns/estimate", { body: { templateId, audience, askValues: { "body.1": "{{contact.firstName}}" } } });
      const templateId = await templateIdOf(app, channel);
      const res = await estimate({ type: "tags", tags: [tag], match: "any" });
      // Tag audiences are counted in SQL by fact combination, id lists member by member: the same numbers.
      expect((await estimate({ type: "contacts", contactIds: ids })).body.data).toEqual(res.body.data);
      expect(res.status).toBe(200);
      const d = res.body.data;
      expect({ sendable: d.sendable, excluded: d.excluded }).toEqual(expected[channel]);
      expect(d.matched).toBe(6);
      expect(d.matched).toBe(d.sendable + Object.values(d.excluded as Record<string, number>).reduce((a, b) => a + b, 0));
      expect(d.channel).toBe(channel);
      const price = { whatsapp: "0.050000", x: "0.010000", email: "0.001000", telegram: "0.002000" }[channel as string] ?? "0.000000";
      expect(d.unitPrice).toBe(price);
      expect(d.estimatedCost).toEqual({ amount: (Number(price) * d.sendable).toFixed(6), unit: "USD" });
      expect(d.balance).toEqual({ amount: "100.000000", unit: "USD" });
      expect(d.sufficientBalance).toBe(true);
      expect(d.dailyDmLimit).toBe(channel === "x" ? 1000 : null); // the sandbox X account's default daily_dm_limit
      expect(Object.keys(d).sort()).toEqual([
        "balance",
        "channel",
        "dailyDmLimit",
        "estimatedCost",
        "excluded",
        "matched",
        "sendable",
        "sufficientBalance",
        "unitPrice",
      ]);
    });
});

describe("campaign routes: validation, statuses and their errors", () => {
  let app: TestApp;
  let wa: string;
  let contactIds: string[];
  beforeAll(async () => {
    app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z"), balance: "1.000000" });
    wa = await templateIdOf(app, "whatsapp");
    contactIds = [];
    for (let i = 1; i <= 3; i++) contactIds.push(await person(app, "whatsapp", String(i), { tag: "vip" }));
    await app.request("POST", "/tags", { body: { name: "empty" } });
    await app.request("POST", "/media", { raw: "x" }); // nothing stored: wrong content type
  });
  afterAll(() => app.close());
  const body = (extra: object = {}): any => ({
    name: "June",
    templateId: wa,
    audience: { type: "tags", tags: ["vip"] },
    askValues: { "body.1": "Sale" },
    ...extra,
  });

  runScenarios(
    () => app,
    [
      ...rowsOf("POST", "/campaigns/estimate", [
        {
          name: "estimate: unknown template → 422 /templateId",
          get body() {
            return body({ templateId: "0193a4b2-0000-7000-8000-00000000ffff" });
          },
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/templateId" }] } },
        },
        {
          name: "estimate: a template param missing from askValues → 422 /askValues/body.1",
          get body() {
            return body({ askValues: {} });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/askValues/body.1" }] } },
        },
        {
          name: "estimate: askValues key the template does not take → 422",
          get body() {
            return body({ askValues: { "body.1": "a", "body.2": "b" } });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/askValues/body.2" }] } },
        },
        {
          name: "estimate: unknown contact reference → 422",
          get body() {
            return body({ askValues: { "body.1": "{{contact.shoeSize}}" } });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/askValues/body.1" }] } },
        },
        {
          name: "estimate: unknown tag → 422 /audience/tags/1",
          get body() {
            return body({ audience: { type: "tags", tags: ["vip", "nope"] } });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/audience/tags/1" }] } },
        },
        {
          name: "estimate: unknown contact id → 422 /audience/contactIds/0",
          get body() {
            return body({ audience: { type: "contacts", contactIds: ["0193a4b2-0000-7000-8000-00000000ffff"] } });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/audience/contactIds/0" }] } },
        },
        {
          name: "estimate: headerMediaId on a template without a media header → 422",
          get body() {
            return body({ headerMediaId: "0193a4b2-0000-7000-8000-00000000ffff" });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/headerMediaId" }] } },
        },
        {
          name: "estimate: channelAccountId of another account → 422",
          get body() {
            return body({ channelAccountId: ACCOUNTS.email });
          },
          status: 422,
          contains: { error: { details: [{ pointer: "/channelAccountId" }] } },
        },
        {
          name: "estimate: audience of another shape → 422 naming /audience",
          get body() {
            return body({ audience: { type: "segment", id: "x" } });
          },
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED" } },
        },
      ]),
      {
        name: "create without name → 422 /name",
        method: "POST",
        url: "/campaigns",
        get body() {
          return { ...body(), name: undefined };
        },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED" } },
      },
      {
        name: "create: 201 running, priced from the estimate (3 × 0.05)",
        method: "POST",
        url: "/campaigns",
        get body() {
          return body();
        },
        status: 201,
        contains: {
          data: {
            status: "running",
            channel: "whatsapp",
            channelAccountId: ACCOUNTS.whatsapp,
            cost: { estimated: { amount: "0.150000", unit: "USD" } },
            stats: { matched: 3, sendable: 3 },
          },
        },
      },
      {
        name: "empty tag audience: created, completes with nobody to send",
        method: "POST",
        url: "/campaigns",
        get body() {
          return body({ audience: { type: "tags", tags: ["empty"] } });
        },
        status: 201,
        contains: { data: { stats: { matched: 0 } } },
      },
      {
        name: "GET unknown campaign → 404",
        method: "GET",
        url: "/campaigns/0193a4b2-0000-7000-8000-00000000ffff",
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
      { name: "GET /campaigns?status=bogus → 422", method: "GET", url: "/campaigns?status=bogus", status: 422 },
      { name: "pause unknown → 404", method: "POST", url: "/campaigns/0193a4b2-0000-7000-8000-00000000ffff/pause", status: 404 },
    ],
  );

  test("scopes: campaigns:read lists but cannot create", async () => {
    const { key } = await app.newKey({ scopes: ["campaigns:read"] });
    expect((await app.request("GET", "/campaigns", { key })).status).toBe(200);
    const res = await app.request("POST", "/campaigns", { key, body: body() });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("API_SCOPE_MISSING");
  });

  test("402 when the estimate is above the balance; nothing stored", async () => {
    for (let i = 10; i < 40; i++) await person(app, "whatsapp", String(i), { tag: "many" }); // 30 × 0.05 = 1.50 > 1.00
    const before = (await app.request("GET", "/campaigns")).body.data.length;
    const res = await app.request("POST", "/campaigns", { body: body({ audience: { type: "tags", tags: ["many"] } }) });
    expect(res.status).toBe(402);
    expect(res.body.error.code).toBe("INSUFFICIENT_BALANCE");
    expect((await app.request("GET", "/campaigns")).body.data.length).toBe(before);
    const est = await app.request("POST", "/campaigns/estimate", { body: body({ audience: { type: "tags", tags: ["many"] } }) });
    expect(est.body.data).toMatchObject({ sendable: 30, estimatedCost: { amount: "1.500000" }, sufficientBalance: false });
  });

  test("another company's campaign is 404 on every route, and not listed", async () => {
    const mine = (await app.request("POST", "/campaigns", { body: body({ name: "mine" }) })).body.data;
    const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
    const { key } = await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "other", scopes: ["*"] });
    for (const [m, u] of [
      ["GET", ""],
      ["GET", "/recipients"],
      ["POST", "/pause"],
      ["POST", "/resume"],
      ["POST", "/cancel"],
    ] as const) {
      const res = await app.request(m, `/campaigns/${mine.id}${u}`, { key });
      expect([u, res.status, res.body.error?.code]).toEqual([u, 404, "NOT_FOUND"]);
    }
    expect((await app.request("GET", "/campaigns", { key })).body.data).toEqual([]);
    // Nor can it send another company's template.
    expect((await app.request("POST", "/campaigns/estimate", { key, body: body() })).body.error.details[0].pointer).toBe("/templateId");
  });

  test("statuses and their 409s: pause → resume → cancel, then nothing more", async () => {
    const c = (await app.request("POST", "/campaigns", { body: body({ name: "states" }) })).body.data;
    expect(c.status).toBe("running");
    expect((await app.request("POST", `/campaigns/${c.id}/resume`)).status).toBe(409);
    const paused = await app.request("POST", `/campaigns/${c.id}/pause`);
    expect(paused.body.data).toMatchObject({ status: "paused", pauseReason: "MANUAL" });
    expect((await app.request("POST", `/campaigns/${c.id}/pause`)).body.error.code).toBe("CONFLICT");
    expect((await app.request("POST", `/campaigns/${c.id}/resume`)).body.data).toMatchObject({ status: "running", pauseReason: null });
    const canceled = await app.request("POST", `/campaigns/${c.id}/cancel`);
    expect(canceled.body.data.status).toBe("canceled");
    expect(canceled.body.data.canceledAt).not.toBeNull();
    for (const a of ["pause", "resume", "cancel"]) expect((await app.request("POST", `/campaigns/${c.id}/${a}`)).status).toBe(409);
    await app.deps.queue.drain();
    const after = (await app.request("GET", `/campaigns/${c.id}`)).body.data;
    expect(after.status).toBe("canceled");
    // Canceled before its run job resolved the audience: nothing was sent.
    expect(after.stats.sent + after.stats.delivered + after.stats.read).toBe(0);
    expect(
      eventsOf(app)
        .filter((e) => e.type.startsWith("campaign.") && e.data.campaign.id === c.id)
        .map((e) => e.type),
    ).toEqual(["campaign.started", "campaign.paused", "campaign.resumed", "campaign.canceled"]);
  });

  test("Idempotency-Key: a replayed create returns the same campaign", async () => {
    const h = { "idempotency-key": "camp-1" };
    const a = await app.request("POST", "/campaigns", { body: body({ name: "idem" }), headers: h });
    const b = await app.request("POST", "/campaigns", { body: body({ name: "idem" }), headers: h });
    expect(a.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBe("true");
    expect(b.body.data.id).toBe(a.body.data.id);
    const c = await app.request("POST", "/campaigns", { body: body({ name: "other" }), headers: h });
    expect(c.body.error.code).toBe("IDEMPOTENCY_CONFLICT");
  });

  test("list: newest first, filters, cursor", async () => {
    const all = (await app.request("GET", "/campaigns?limit=2")).body;
    expect(all.data.length).toBe(2);
    expect(all.data[0].id > all.data[1].id).toBe(true);
    const next = (await app.request("GET", `/campaigns?limit=2&cursor=${all.page.nextCursor}`)).body;
    expect(next.data[0].id < all.data[1].id).toBe(true);
    const canceled = (await app.request("GET", "/campaigns?status=canceled")).body.data;
    expect(canceled.length).toBeGreaterThan(0);
    expect(canceled.every((c: { status: string }) => c.status === "canceled")).toBe(true);
    expect((await app.request("GET", "/campaigns?channel=email")).body.data).toEqual([]);
  });
});

describe("the engine", () => {
  let app: TestApp;
  beforeEach(async () => {
    app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
  });
  afterEach(() => app.close());

  async function campaign(tag: string, extra: object = {}, channel: ChannelName = "whatsapp") {
    const res = await app.request("POST", "/campaigns", {
      body: {
        name: tag,
        templateId: await templateIdOf(app, channel),
        audience: { type: "tags", tags: [tag] },
        askValues: { "body.1": '{{contact.firstName | "friend"}}' },
        ...extra,
      },
    });
    if (res.status !== 201) throw new Error(JSON.stringify(res.body));
    return res.body.data as { id: string };
  }
  const get = async (id: string) => (await app.request("GET", `/campaigns/${id}`)).body.data;
  const recipients = async (id: string, q = "") => (await app.request("GET", `/campaigns/${id}/recipients?limit=200${q}`)).body.data as any[];

  test("sends every sendable recipient once, records exclusions, completes, bills by the template's priceType", async () => {
    for (let i = 1; i <= 25; i++) await person(app, "whatsapp", String(i), { tag: "sale", firstName: i === 3 ? null : `P${i}` });
    await person(app, "whatsapp", "90", { tag: "sale", optIn: false });
    await person(app, "whatsapp", "91", { tag: "sale", identity: false });
    const c = await campaign("sale");
    await app.deps.queue.drain();
    const d = await get(c.id);
    expect(d.status).toBe("completed");
    expect(d.progress).toBe(100);
    expect(d.stats).toMatchObject({ matched: 27, sendable: 25, excluded: { ...zero, noConsent: 1, noIdentity: 1 }, pending: 0, failed: 0 });
    // sandbox: sent at once, delivered after an hour (test default), so every recipient is `sent`.
    expect(d.stats.sent).toBe(25);
    expect(d.cost).toEqual({ estimated: { amount: "1.250000", unit: "USD" }, spent: { amount: "1.250000", unit: "USD" } });
    const rs = await recipients(c.id);
    expect(rs.length).toBe(27);
    expect(
      rs
        .filter((r) => r.status === "excluded")
        .map((r) => r.reason)
        .sort(),
    ).toEqual(["noConsent", "noIdentity"]);
    const sent = rs.filter((r) => r.status === "sent");
    expect(new Set(sent.map((r) => r.messageId)).size).toBe(25);
    const m = (await app.request("GET", `/messages/${sent[0].messageId}`)).body.data;
    expect(m).toMatchObject({ campaignId: c.id, type: "template", priceType: "wa_template_text", unitPrice: "0.050000", charged: true, status: "sent" });
    // askValues: contact reference with fallback
    const noName = rs.find((r) => r.contactId === sent.find(() => true)!.contactId);
    expect(noName).toBeDefined();
    const params = await Promise.all(sent.map(async (r) => (await app.request("GET", `/messages/${r.messageId}`)).body.data.content.template.params["body.1"]));
    expect(params).toContain("friend");
    expect(params).toContain("P1");
    const types = eventsOf(app)
      .filter((e) => e.type.startsWith("campaign."))
      .map((e) => e.type);
    expect(types).toEqual(["campaign.started", "campaign.completed"]);
    expect(eventsOf(app, "message.sent").every((e) => e.data.message.campaignId === c.id)).toBe(true);
    // Ledger: one debit per charged message.
    expect((await app.request("GET", "/me")).body.data.company.balance.amount).toBe("98.750000");
  });

  test("funnel follows the messages: delivered, read, failed; replied counts contacts who wrote in after", async () => {
    const ids: string[] = [];
    for (let i = 1; i <= 4; i++) ids.push(await person(app, "whatsapp", String(i), { tag: "f" }));
    const c = await campaign("f");
    await app.deps.queue.drain();
    const rs = await recipients(c.id);
    const msg = (n: number) => rs.find((r) => r.contactId === ids[n])!.messageId;
    const pmid = async (n: number) => (await app.request("GET", `/messages/${msg(n)}`)).body.data.providerMessageId;
    // A provider's status report, through the one inbound path.
    const status = async (n: number, s: "delivered" | "read") => {
      const providerMessageId = await pmid(n);
      await app.deps.db.unit(() =>
        applyProviderStatus(app.deps, ACCOUNTS.whatsapp, { kind: "status", providerMessageId, status: s, timestamp: app.clock.now() }),
      );
    };
    await status(0, "delivered");
    await status(1, "read");
    await inbound(app, "whatsapp", addressOf("whatsapp", "3"), "interested!", 0);
    const d = await get(c.id);
    expect(d.stats).toMatchObject({ sent: 2, delivered: 1, read: 1, replied: 1, pending: 0 });
  });

  test("an audience snapshot: contacts tagged after the start are not included", async () => {
    await person(app, "whatsapp", "1", { tag: "snap" });
    const c = await campaign("snap");
    await app.deps.queue.drain();
    await person(app, "whatsapp", "2", { tag: "snap" });
    await app.deps.queue.drain();
    expect((await get(c.id)).stats.matched).toBe(1);
  });

  test("scheduled: waits for scheduledAt, then starts (also when overdue after a restart)", async () => {
    await person(app, "whatsapp", "1", { tag: "later" });
    const at = new Date(app.clock.now().getTime() + 3_600_000).toISOString();
    const c = await campaign("later", { scheduledAt: at });
    expect((await get(c.id)).status).toBe("scheduled");
    await app.deps.queue.drain();
    expect((await get(c.id)).status).toBe("scheduled");
    // Restart two hours later: the overdue start runs at once.
    await app.close({ keepData: true });
    app = await createTestApp({ dataDir: app.dir, start: new Date(app.clock.now().getTime() + 2 * 3_600_000) });
    await app.deps.queue.drain();
    const d = await get(c.id);
    expect(d.status).toBe("completed");
    expect(d.stats.sent).toBe(1);
    expect(d.startedAt).not.toBeNull();
  });

  test("runs out of balance mid-way: pauses with INSUFFICIENT_BALANCE; a credit and resume finish it without re-sending", async () => {
    await app.close();
    app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z"), balance: "1.000000" });
    for (let i = 1; i <= 15; i++) await person(app, "whatsapp", String(i), { tag: "b" }); // 15 × 0.05 = 0.75 ≤ 1.00
    const c = await campaign("b");
    // Someone else spends the balance after the campaign was created.
    await app.request("POST", "/messages", {
      body: { channel: "whatsapp", to: { phone: "+14155559999" }, type: "template", template: { name: "hello_world", params: { "body.1": "x" } } },
    });
    for (let i = 0; i < 9; i++)
      await app.request("POST", "/messages", {
        body: { channel: "whatsapp", to: { phone: `+1415555980${i}` }, type: "template", template: { name: "hello_world", params: { "body.1": "x" } } },
      });
    // 1.00 − 10 × 0.05 = 0.50: ten campaign messages fit, five do not.
    await app.deps.queue.drain();
    let d = await get(c.id);
    expect(d).toMatchObject({ status: "paused", pauseReason: "INSUFFICIENT_BALANCE" });
    expect(d.stats.sent).toBe(10);
    expect(d.stats.pending).toBe(5);
    await app.deps.ledger.credit({ companyId: app.company.id, amount: 1_000_000 });
    expect((await app.request("POST", `/campaigns/${c.id}/resume`)).status).toBe(200);
    await app.deps.queue.drain();
    d = await get(c.id);
    expect(d).toMatchObject({ status: "completed", stats: { sent: 15, pending: 0 } });
    const rs = await recipients(c.id);
    expect(new Set(rs.map((r) => r.messageId)).size).toBe(15);
    expect(eventsOf(app, "campaign.paused")[0]!.data.campaign.pauseReason).toBe("INSUFFICIENT_BALANCE");
  });

  test("ERROR_RATE: more than half of the last sends failing pauses the campaign", async () => {
    for (let i = 1; i <= 10; i++) await person(app, "telegram", String(i), { tag: "e", wroteAgo: HOUR });
    for (let i = 11; i <= 50; i++) {
      // Sandbox test recipients: a value starting with "fail" is rejected by the provider.
      await inbound(app, "telegram", { handle: `fail_${i}` }, "hi", HOUR);
      await app.request("POST", "/contacts", { body: { identities: [{ channel: "telegram", value: `fail_${i}` }], tags: ["e"], optIn: true } });
    }
    const c = await campaign("e", {}, "telegram");
    await app.deps.queue.drain();
    const d = await get(c.id);
    expect(d).toMatchObject({ status: "paused", pauseReason: "ERROR_RATE" });
    expect(d.stats.failed).toBeGreaterThan(d.stats.sent);
    // Failed before `sent`: refunded, so spent counts only what went out.
    expect(Number(d.cost.spent.amount)).toBeCloseTo(d.stats.sent * 0.002, 6);
    // A failed recipient carries its message's normalized reason (not the provider's code).
    const failed = (await recipients(c.id)).filter((r) => r.status === "failed");
    expect(failed.length).toBe(d.stats.failed);
    const m = (await app.request("GET", `/messages/${failed[0]!.messageId}`)).body.data;
    expect(m.error.code).toBeTruthy();
    expect(failed[0]!.reason).toBe(m.error.reason);
  });

  test("the window of recent outcomes: appended in order by moves kept back until the commit, seen by a read inside it, the last 100 kept", async () => {
    await person(app, "whatsapp", "1", { tag: "w" });
    const c = await campaign("w");
    await app.deps.queue.drain();
    const store = modulesOf(app.deps).campaigns.service.store;
    const t = app.clock.now().getTime();
    const window = async () => (await store.progress(c.id))!.recentOutcomes;
    const before = await window(); // the campaign's own send
    await app.deps.db.unit(async () => {
      for (let i = 0; i < 60; i++) await store.bump(c.id, { n_replied: 1 }, t, "s");
      expect(await window()).toBe(before + "s".repeat(60)); // a read inside the unit writes them first
    });
    await app.deps.db.unit(async () => {
      for (let i = 0; i < 30; i++) await store.bump(c.id, {}, t, "f");
      for (let i = 0; i < 30; i++) await store.bump(c.id, {}, t, "s");
    });
    expect(await window()).toBe((before + "s".repeat(60) + "f".repeat(30) + "s".repeat(30)).slice(-100));
    expect(await window()).toHaveLength(100);
    expect((await get(c.id)).stats.replied).toBe(60);
  });

  test("X daily DM limit: the rest waits for the next UTC day", async () => {
    await app.close();
    app = await createTestApp({
      start: new Date("2026-06-01T12:00:00Z"),
      config: { channels: sandboxChannels().map((c) => (c.channel === "x" ? { ...c, settings: { ...c.settings, daily_dm_limit: 3 } } : c)) },
    });
    for (let i = 1; i <= 5; i++) await person(app, "x", String(i), { tag: "dm", wroteAgo: HOUR });
    const est = await app.request("POST", "/campaigns/estimate", {
      body: { templateId: await templateIdOf(app, "x"), audience: { type: "tags", tags: ["dm"] }, askValues: { "body.1": "hi" } },
    });
    expect(est.body.data.dailyDmLimit).toBe(3);
    const c = await campaign("dm", {}, "x");
    await app.deps.queue.drain();
    let d = await get(c.id);
    expect(d).toMatchObject({ status: "running", stats: { sent: 3, pending: 2 } });
    app.clock.set(new Date("2026-06-02T00:00:01Z"));
    await app.deps.queue.drain();
    d = await get(c.id);
    // The day went by: the sandbox's (durable) delivered/read reports of the first three came in too.
    expect(d).toMatchObject({ status: "completed", stats: { pending: 0, failed: 0 } });
    expect(d.stats.sent + d.stats.delivered + d.stats.read).toBe(5);
  });

  test("cancel while running: pending recipients canceled at once, the created messages still go out, counts add up", async () => {
    for (let i = 1; i <= 30; i++) await person(app, "email", String(i), { tag: "c" });
    const c = await campaign("c", {}, "email");
    // Resolve the audience and create one batch, then cancel.
    const { engine, service: campaigns } = modulesOf(app.deps).campaigns;
    while (!(await campaigns.store.get(c.id))!.resolvedAt) await app.deps.db.unit(async () => engine.resolvePage((await campaigns.store.get(c.id))!));
    await app.deps.db.unit(() => engine.sendBatch(c.id, 10));
    const res = await app.request("POST", `/campaigns/${c.id}/cancel`);
    expect(res.body.data.stats).toMatchObject({ canceled: 20, pending: 10 });
    await app.deps.queue.drain();
    const d = await get(c.id);
    expect(d).toMatchObject({ status: "canceled", stats: { sent: 10, canceled: 20, pending: 0 } });
  });

  test("pause/resume/cancel racing the fan-out: no recipient gets two messages, the counts add up", async () => {
    const lines = Array.from({ length: 3000 }, (_, i) =>
      JSON.stringify({ firstName: `R${i}`, identities: [{ channel: "email", value: `r${i}@example.com` }], tags: ["race"], optIn: true }),
    );
    const imp = await app.request("POST", "/contacts/import", { raw: lines.join("\n"), headers: { "content-type": "application/x-ndjson" } });
    expect(imp.status).toBe(202);
    await app.deps.queue.drain();
    const c = await campaign("race", {}, "email");
    app.deps.queue.start();
    // The race is with the fan-out: the audience is resolved first. (Resolution shrinks to 1 ms slices while
    // requests write — the pause/resume/cancel below are group-commit items — so on PostgreSQL a cancel
    // could otherwise land before the snapshot was whole, and `matched` would rightly be less than 3000.)
    const { store } = modulesOf(app.deps).campaigns.service;
    for (let i = 0; i < 400 && !(await store.get(c.id))!.resolvedAt; i++) await Bun.sleep(5);
    const seen: string[] = [];
    for (const action of ["pause", "resume", "pause", "resume", "pause", "resume", "cancel"]) {
      await Bun.sleep(15);
      const res = await app.request("POST", `/campaigns/${c.id}/${action}`);
      seen.push(`${action}:${res.status}`);
    }
    expect(seen.every((s) => s.endsWith(":200"))).toBe(true);
    // The messages created before the cancel still go out.
    for (let i = 0; i < 400 && (await get(c.id)).stats.pending > 0; i++) await Bun.sleep(25);
    await app.deps.queue.stop();
    const d = await get(c.id);
    expect(d.status).toBe("canceled");
    const s = d.stats;
    expect(s.matched).toBe(3000);
    expect(s.pending).toBe(0);
    expect(s.sent + s.delivered + s.read + s.failed + s.canceled).toBe(3000);
    const n = async (sql: string) => ((await app.deps.db.sql(sql).get(c.id)) as { n: number }).n;
    expect(await n("SELECT count(*) AS n FROM (SELECT contact_id FROM messages WHERE campaign_id = ? GROUP BY contact_id HAVING count(*) > 1) AS twice")).toBe(
      0,
    );
    expect(await n("SELECT count(*) AS n FROM messages WHERE campaign_id = ?")).toBe(s.sent + s.delivered + s.read + s.failed);
    expect(await n("SELECT count(*) AS n FROM campaign_recipients WHERE campaign_id = ? AND status = 'canceled' AND message_id IS NULL")).toBe(s.canceled);
  });

  test("a deleted template fails the campaign and cancels its pending recipients", async () => {
    for (let i = 1; i <= 3; i++) await person(app, "telegram", String(i), { tag: "t", wroteAgo: HOUR });
    const tpl = await app.request("POST", "/templates", { body: { channel: "telegram", name: "promo", language: "en", body: "Hi {{1}}" } });
    expect(tpl.status).toBe(201);
    const c = (
      await app.request("POST", "/campaigns", {
        body: { name: "t", templateId: tpl.body.data.id, audience: { type: "tags", tags: ["t"] }, askValues: { "body.1": "x" } },
      })
    ).body.data;
    // Disabled by another process (the CLI, another instance): this one's template cache sees it at once.
    const other = app.openConnection();
    try {
      await app.externalCommit(() => other.sql("UPDATE templates SET status = 'disabled' WHERE id = ?").run(tpl.body.data.id));
    } finally {
      other.close();
    }
    await app.deps.queue.drain();
    const d = await get(c.id);
    expect(d).toMatchObject({ status: "failed", failureReason: "TEMPLATE_UNAVAILABLE", stats: { sent: 0 } });
    expect(eventsOf(app, "campaign.failed").length).toBe(1);
  });
});
