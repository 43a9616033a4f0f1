/**
 * Source tracking through the real app: sources, links and QR codes (decoded back), first-touch attribution
 * from recorded provider payloads through the real webhook parsers (WhatsApp Click-to-WhatsApp, Messenger
 * postback and standalone referral, Instagram, Telegram deep link), codes in a first text, the sandbox
 * simulation; manual assign/remove with history; statistics per period; license, scopes and tenancy.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import jsQR from "jsqr";
import { PNG } from "pngjs";
import { signLicense } from "../../../scripts/sign-license";
import { eventsOf, inbound } from "../../../test/helpers/messaging";
import { rowsOf, runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { ACCOUNTS, createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { createApiKey } from "../api-keys/api-keys.service";
import { createCompany } from "../companies/companies.service";

const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");
const FUTURE = "2099-01-01T00:00:00.000Z";
const SECRET = "meta-app-secret";
const ID = {
  wa: "0193a4b2-0000-7000-8000-0000000050a1",
  fb: "0193a4b2-0000-7000-8000-0000000050a2",
  ig: "0193a4b2-0000-7000-8000-0000000050a3",
  tg: "0193a4b2-0000-7000-8000-0000000050a4",
};
const unreachable = "http://127.0.0.1:9"; // nothing is sent in these tests

let app: TestApp;
let acmeKey: string;
let readKey: string;
let noScopeKey: string;

const writeLicense = (modules: string[], company = "default", expiresAt = FUTURE) =>
  writeFileSync(app.config.license.file, signLicense({ company, modules, expiresAt, privateKey: devKey }));
const epoch = () => Math.floor(app.clock.now().getTime() / 1000);

/** A signed Meta webhook POST (WhatsApp Cloud, Messenger, Instagram) to an account's hook. */
async function metaHook(accountId: string, payload: unknown) {
  const raw = JSON.stringify(payload);
  const sig = "sha256=" + createHmac("sha256", SECRET).update(raw).digest("hex");
  const res = await app.request("POST", `/hooks/${accountId}`, { raw, headers: { "content-type": "application/json", "x-hub-signature-256": sig }, key: null });
  expect(res.status).toBe(200);
}

async function source(body: Record<string, unknown>, key?: string) {
  const res = await app.request("POST", "/sources", { body: { type: "link", ...body }, key });
  if (res.status !== 201) throw new Error(JSON.stringify(res.body));
  return res.body.data as { id: string; code: string; link: string | null };
}

const contactOf = async (channel: string, value: string) => {
  const res = await app.request("GET", `/contacts?channel=${channel}&limit=200`);
  const c = (res.body.data as { id: string; identities: { channel: string; value: string }[] }[]).find((c) =>
    c.identities.some((i) => i.channel === channel && i.value === value),
  );
  if (!c) throw new Error(`no contact ${channel}:${value}`);
  return c.id;
};
const sourceOf = async (contactId: string) => (await app.request("GET", `/contacts/${contactId}/source`)).body.data;

beforeAll(async () => {
  app = await createTestApp({
    start: new Date("2026-03-02T10:00:00.000Z"),
    config: {
      rate_limit: { requests_per_second: 10000, burst: 10000 },
      channels: [
        ...sandboxChannels(),
        {
          id: ID.wa,
          channel: "whatsapp",
          provider: "whatsapp-cloud",
          name: "WA",
          chat_handle: "+1 555 0100 111".replace(/\s/g, ""),
          settings: { phone_number_id: "PNID1", access_token: "t", app_secret: SECRET, verify_token: "v", base_url: unreachable },
        },
        {
          id: ID.fb,
          channel: "messenger",
          provider: "messenger",
          name: "FB",
          settings: { page_id: "PAGE1", page_access_token: "t", app_secret: SECRET, verify_token: "v", base_url: unreachable },
        },
        {
          id: ID.ig,
          channel: "instagram",
          provider: "instagram",
          name: "IG",
          chat_handle: "shop.ig",
          settings: { ig_user_id: "IGUSER1", access_token: "t", app_secret: SECRET, verify_token: "v", base_url: unreachable },
        },
        { id: "0193a4b2-0000-7000-8000-0000000050a5", company: "acme", channel: "whatsapp", provider: "sandbox", name: "Acme WA", default: true, settings: {} },
        {
          id: ID.tg,
          channel: "telegram",
          provider: "telegram",
          name: "TG",
          chat_handle: "ShopBot",
          settings: { bot_token: "1:t", secret_token: "tg-secret", mode: "webhook", base_url: unreachable },
        },
      ],
    },
  });
  writeLicense(["sources"]);
  readKey = (await app.newKey({ name: "reader", scopes: ["sources:read"] })).key;
  noScopeKey = (await app.newKey({ name: "contacts-only", scopes: ["contacts:read"] })).key;
  const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "acme", name: "Acme" });
  acmeKey = (await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "acme", scopes: ["*"] })).key;
});
afterAll(() => app.close());

describe("sources: links and QR codes", () => {
  test("a link per channel, from the account's chat_handle", async () => {
    const wa = await source({ name: "Poster", type: "qr", channel: "whatsapp", channelAccountId: ID.wa, code: "poster_1" });
    expect(wa.link).toBe("https://wa.me/15550100111?text=Hi!%20(ref%20poster_1)");
    expect((await source({ name: "FB", channel: "messenger", channelAccountId: ID.fb, code: "fb-1" })).link).toBe("https://m.me/PAGE1?ref=fb-1");
    expect((await source({ name: "IG", channel: "instagram", channelAccountId: ID.ig, code: "ig-1" })).link).toBe("https://ig.me/m/shop.ig?ref=ig-1");
    expect((await source({ name: "TG", channel: "telegram", channelAccountId: ID.tg, code: "tg-1" })).link).toBe("https://t.me/ShopBot?start=tg-1");
    // The sandbox accounts of the test config have no chat_handle; e-mail has no click-to-chat link.
    expect((await source({ name: "sandbox", channel: "whatsapp" })).link).toBeNull();
    const generated = await source({ name: "no code", channel: "email" });
    expect(generated.code).toMatch(/^[a-z0-9]{10}$/);
    expect(generated.link).toBeNull();
  });

  test("QR codes decode back to the link (PNG and SVG)", async () => {
    const s = await source({ name: "QR", type: "qr", channel: "telegram", channelAccountId: ID.tg, code: "qr_check" });
    // Raw bytes (app.request reads bodies as text).
    const png = await app.app.handle(new Request(`http://localhost/api/public/v1/sources/${s.id}/qr.png`, { headers: { authorization: `Bearer ${app.key}` } }));
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    const img = PNG.sync.read(Buffer.from(await png.arrayBuffer()));
    expect(jsQR(new Uint8ClampedArray(img.data), img.width, img.height)?.data).toBe(s.link!);
    const svg = await app.request("GET", `/sources/${s.id}/qr.svg`);
    expect(svg.headers.get("content-type")).toBe("image/svg+xml");
    const bitmap = rasterizeSvg(svg.body as string, 8);
    expect(jsQR(bitmap.data, bitmap.width, bitmap.height)?.data).toBe(s.link!);
  });

  test("a source without a link has no QR code (409)", async () => {
    const s = await source({ name: "mail", channel: "email", code: "mail-1" });
    expect((await app.request("GET", `/sources/${s.id}/qr.svg`)).body.error.code).toBe("CONFLICT");
  });
});

describe("attribution, first touch wins", () => {
  test("WhatsApp Click-to-WhatsApp ad: an `ad` source is created from the unknown source_id, the referral kept", async () => {
    const referral = {
      source_url: "https://fb.me/3cr4Wqqkq",
      source_id: "120210000000001",
      source_type: "ad",
      headline: "Spring sale",
      body: "20% off all week",
      media_type: "image",
      image_url: "https://scontent.example/ad.jpg",
      ctwa_clid: "ARAkLkA8rmlFeiCktEJQ-QTwRiyYHAFDLMNDBH0CD3qpjd0HR4irJ6LEkR7JwFF4XvnO2E4Nx0-eM-ZABe",
    };
    const payload = (from: string, id: string, extra: object) => ({
      object: "whatsapp_business_account",
      entry: [
        {
          id: "WABA1",
          changes: [
            {
              field: "messages",
              value: {
                messaging_product: "whatsapp",
                metadata: { display_phone_number: "15550100111", phone_number_id: "PNID1" },
                contacts: [{ profile: { name: "Ann" }, wa_id: from }],
                messages: [{ from, id, timestamp: String(epoch()), type: "text", text: { body: "Is this still available?" }, ...extra }],
              },
            },
          ],
        },
      ],
    });
    await metaHook(ID.wa, payload("14155550111", "wamid.CTWA1", { referral }));
    const ann = await contactOf("whatsapp", "+14155550111");
    const got = await sourceOf(ann);
    expect(got).toMatchObject({
      via: "auto",
      referral,
      source: { type: "ad", name: "Spring sale", externalId: "120210000000001", channel: "whatsapp", channelAccountId: ID.wa },
    });
    // A second contact from the same ad lands on the same source (no second ad source).
    await metaHook(ID.wa, payload("14155550112", "wamid.CTWA2", { referral }));
    expect((await sourceOf(await contactOf("whatsapp", "+14155550112"))).source.id).toBe(got.source.id);
    // Ann's later click on another ad does not move her.
    await metaHook(ID.wa, payload("14155550111", "wamid.CTWA3", { referral: { ...referral, source_id: "120210000000999", headline: "Other" } }));
    expect((await sourceOf(ann)).source.id).toBe(got.source.id);
    const ev = eventsOf(app, "contact.source_attributed").filter((e) => e.data.contactId === ann);
    expect(ev).toHaveLength(1);
    expect(ev[0]!.data).toMatchObject({ via: "auto", source: { id: got.source.id } });
  });

  test("Messenger: Get Started postback with a referral on a new thread; a standalone referral on an existing one", async () => {
    const s1 = await source({ name: "FB link", channel: "messenger", channelAccountId: ID.fb, code: "fb_spring" });
    const s2 = await source({ name: "FB other", channel: "messenger", channelAccountId: ID.fb, code: "fb_other" });
    const entry = (messaging: object[]) => ({ object: "page", entry: [{ id: "PAGE1", time: Date.now(), messaging }] });
    const base = (psid: string) => ({ sender: { id: psid }, recipient: { id: "PAGE1" }, timestamp: app.clock.now().getTime() });
    await metaHook(
      ID.fb,
      entry([
        {
          ...base("PSID-1"),
          postback: { title: "Get Started", payload: "GET_STARTED", mid: "m_pb_1", referral: { ref: "fb_spring", source: "SHORTLINK", type: "OPEN_THREAD" } },
        },
      ]),
    );
    const p1 = await contactOf("messenger", "PSID-1");
    expect(await sourceOf(p1)).toMatchObject({ via: "auto", source: { id: s1.id }, referral: { ref: "fb_spring", source: "SHORTLINK" } });
    // An existing thread: the referral arrives alone (messaging_referrals) and rides on the next message.
    await metaHook(ID.fb, entry([{ ...base("PSID-2"), message: { mid: "m_2a", text: "hello" } }]));
    const p2 = await contactOf("messenger", "PSID-2");
    expect(await sourceOf(p2)).toBeNull();
    await metaHook(ID.fb, entry([{ ...base("PSID-2"), referral: { ref: "fb_other", source: "SHORTLINK", type: "OPEN_THREAD" } }]));
    await metaHook(ID.fb, entry([{ ...base("PSID-2"), message: { mid: "m_2b", text: "me again" } }]));
    expect(await sourceOf(p2)).toMatchObject({ source: { id: s2.id } });
    // First touch wins for PSID-1.
    await metaHook(ID.fb, entry([{ ...base("PSID-1"), referral: { ref: "fb_other", source: "SHORTLINK", type: "OPEN_THREAD" } }]));
    await metaHook(ID.fb, entry([{ ...base("PSID-1"), message: { mid: "m_1b", text: "again" } }]));
    expect((await sourceOf(p1)).source.id).toBe(s1.id);
  });

  test("Instagram: referral.ref of an ig.me link", async () => {
    const s = await source({ name: "IG bio", channel: "instagram", channelAccountId: ID.ig, code: "ig_bio" });
    await metaHook(ID.ig, {
      object: "instagram",
      entry: [
        {
          id: "IGUSER1",
          time: Date.now(),
          messaging: [
            {
              sender: { id: "IGSID-1" },
              recipient: { id: "IGUSER1" },
              timestamp: app.clock.now().getTime(),
              message: { mid: "ig_m1", text: "hi", referral: { ref: "ig_bio", source: "SHORTLINK", type: "OPEN_THREAD" } },
            },
          ],
        },
      ],
    });
    expect(await sourceOf(await contactOf("instagram", "IGSID-1"))).toMatchObject({ source: { id: s.id } });
  });

  test("Telegram: /start <code> from a t.me deep link", async () => {
    const s = await source({ name: "TG poster", channel: "telegram", channelAccountId: ID.tg, code: "tg_poster" });
    const update = {
      update_id: 9001,
      message: {
        message_id: 5,
        from: { id: 777001, is_bot: false, first_name: "Tom", username: "tom" },
        chat: { id: 777001, type: "private", first_name: "Tom" },
        date: epoch(),
        text: "/start tg_poster",
        entities: [{ offset: 0, length: 6, type: "bot_command" }],
      },
    };
    const res = await app.request("POST", `/hooks/${ID.tg}`, { body: update, headers: { "x-telegram-bot-api-secret-token": "tg-secret" }, key: null });
    expect(res.status).toBe(200);
    expect(await sourceOf(await contactOf("telegram", "777001"))).toMatchObject({
      source: { id: s.id },
      referral: { type: "deep_link", payload: "tg_poster" },
    });
  });

  test("a known code in the text of a contact's first message (plain wa.me link, QR code); not in later ones", async () => {
    const s = await source({ name: "Flyer", type: "qr", channel: "whatsapp", code: "flyer42" });
    await inbound(app, "whatsapp", { phone: "+14155550141" }, "Hi! (ref flyer42)");
    expect(await sourceOf(await contactOf("whatsapp", "+14155550141"))).toMatchObject({ via: "auto", source: { id: s.id }, referral: null });
    await inbound(app, "whatsapp", { phone: "+14155550142" }, "hello");
    await inbound(app, "whatsapp", { phone: "+14155550142" }, "btw flyer42");
    expect(await sourceOf(await contactOf("whatsapp", "+14155550142"))).toBeNull();
  });

  test("the sandbox simulation accepts a referral", async () => {
    const s = await source({ name: "Sandbox", channel: "instagram", code: "sbx_ref" });
    const res = await app.request("POST", `/hooks/${ACCOUNTS.instagram}`, {
      body: { from: { handle: "sbx_user" }, text: "hi", referral: { ref: "sbx_ref", source: "SHORTLINK" } },
    });
    expect(res.status).toBe(202);
    expect(await sourceOf(await contactOf("instagram", "sbx_user"))).toMatchObject({ source: { id: s.id }, referral: { ref: "sbx_ref" } });
  });
});

describe("manual assignment, statistics", () => {
  test("assign, change, remove: history with the key's name; a removed source is not re-attributed", async () => {
    const a = await source({ name: "Event A", type: "other", channel: "whatsapp", code: "event_a" });
    const b = await source({ name: "Event B", type: "other", channel: "whatsapp", code: "event_b" });
    const c = (await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+14155550161" }] } })).body.data.contact.id;
    expect((await app.request("PUT", `/contacts/${c}/source`, { body: { sourceId: a.id } })).body.data).toMatchObject({ via: "manual", source: { id: a.id } });
    await app.request("PUT", `/contacts/${c}/source`, { body: { sourceId: b.id } });
    const removed = (await app.request("PUT", `/contacts/${c}/source`, { body: { sourceId: null } })).body.data;
    expect(removed).toMatchObject({ source: null, via: "manual" });
    expect(removed.history.map((h: { fromSourceId: string | null; toSourceId: string | null; by: string }) => [h.fromSourceId, h.toSourceId, h.by])).toEqual([
      [null, a.id, "admin"],
      [a.id, b.id, "admin"],
      [b.id, null, "admin"],
    ]);
    await inbound(app, "whatsapp", { phone: "+14155550161" }, "event_a");
    expect((await sourceOf(c)).source).toBeNull();
  });

  test("deleting a contact removes its attribution and history (the referral may identify the person)", async () => {
    const s = await source({ name: "Gone", channel: "whatsapp", code: "gone_src" });
    await inbound(app, "whatsapp", { phone: "+14155550191" }, "gone_src");
    const c = await contactOf("whatsapp", "+14155550191");
    expect((await sourceOf(c)).source.id).toBe(s.id);
    expect((await app.request("DELETE", `/contacts/${c}`)).status).toBe(200);
    expect(await app.deps.db.sql("SELECT count(*) AS n FROM contact_sources WHERE contact_id = ?").get(c)).toEqual({ n: 0 });
    expect(await app.deps.db.sql("SELECT count(*) AS n FROM contact_source_history WHERE contact_id = ?").get(c)).toEqual({ n: 0 });
  });

  test("statistics per period: contacts attributed in it, their conversations and messages, records won with the pipeline", async () => {
    const s = await source({ name: "Stats", channel: "whatsapp", code: "stats_src" });
    await inbound(app, "whatsapp", { phone: "+14155550171" }, "stats_src please");
    await inbound(app, "whatsapp", { phone: "+14155550171" }, "and more");
    const t1 = app.clock.now().toISOString();
    app.clock.advance(24 * 3_600_000);
    await inbound(app, "whatsapp", { phone: "+14155550172" }, "stats_src");
    const statsOf = async (q: string) => (await app.request("GET", `/sources?limit=200${q}`)).body.data.find((x: { id: string }) => x.id === s.id).stats;
    expect(await statsOf("")).toEqual({ contacts: 2, conversations: 2, messages: 3, recordsWon: null });
    expect(await statsOf(`&to=${encodeURIComponent(t1)}`)).toEqual({ contacts: 0, conversations: 0, messages: 0, recordsWon: null });
    expect(
      await statsOf(
        `&from=${encodeURIComponent(new Date(Date.parse(t1) - 3_600_000).toISOString())}&to=${encodeURIComponent(new Date(Date.parse(t1) + 1).toISOString())}`,
      ),
    ).toEqual({
      contacts: 1,
      conversations: 1,
      messages: 2,
      recordsWon: null,
    });
    // With the pipeline licensed: a won record of an attributed contact counts.
    writeLicense(["sources", "pipeline"]);
    const contactId = await contactOf("whatsapp", "+14155550171");
    const rec = await app.request("POST", "/records", { body: { title: "Deal", contactId } });
    const won = (await app.request("GET", "/pipeline")).body.data.stages.find((x: { kind: string }) => x.kind === "won").id;
    expect((await app.request("POST", `/records/${rec.body.data.id}/move`, { body: { stageId: won } })).status).toBe(200);
    expect((await statsOf("")).recordsWon).toBe(1);
    writeLicense(["sources"]);
  });
});

describe("errors, license, scopes, tenancy", () => {
  let own: string;
  let ownContact: string;
  let acmeSource: string;
  beforeAll(async () => {
    own = (await source({ name: "Own", type: "qr", channel: "whatsapp", code: "own_1" })).id;
    ownContact = (await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+14155550181" }] } })).body.data.contact.id;
    writeLicense(["sources"], "acme");
    acmeSource = (await source({ name: "Acme", channel: "whatsapp", code: "acme_1" }, acmeKey)).id;
    writeLicense(["sources"]);
  });

  const scenarios: Scenario[] = [
    ...rowsOf("POST", "/sources", [
      {
        name: "code taken → 409 naming /code",
        body: { name: "x", type: "link", channel: "whatsapp", code: "own_1" },
        status: 409,
        contains: { error: { code: "CONFLICT", details: [{ pointer: "/code" }] } },
      },
      {
        name: "bad code → 422 /code",
        body: { name: "x", type: "link", channel: "whatsapp", code: "no spaces" },
        status: 422,
        contains: { error: { details: [{ pointer: "/code" }] } },
      },
      {
        name: "bad type → 422 /type",
        body: { name: "x", type: "billboard", channel: "whatsapp" },
        status: 422,
        contains: { error: { details: [{ pointer: "/type" }] } },
      },
      {
        name: "unknown account → 422 /channelAccountId",
        body: { name: "x", type: "link", channel: "whatsapp", channelAccountId: ID.fb },
        status: 422,
        contains: { error: { details: [{ pointer: "/channelAccountId" }] } },
      },
    ]),
    {
      name: "PATCH renames (and leaves the type alone)",
      method: "PATCH",
      get url() {
        return `/sources/${own}`;
      },
      body: { name: "Renamed" },
      status: 200,
      contains: { data: { name: "Renamed", code: "own_1", type: "qr" } },
    },
    {
      name: "PATCH with nothing → 422",
      method: "PATCH",
      get url() {
        return `/sources/${own}`;
      },
      body: {},
      status: 422,
      contains: { error: { code: "VALIDATION_FAILED" } },
    },
    {
      name: "PUT unknown source → 422 /sourceId",
      method: "PUT",
      get url() {
        return `/contacts/${ownContact}/source`;
      },
      body: { sourceId: "0193a4b2-0000-7000-8000-00000000ffff" },
      status: 422,
      contains: { error: { details: [{ pointer: "/sourceId" }] } },
    },
    { name: "bad from → 422 query:from", method: "GET", url: "/sources?from=yesterday", status: 422 },
    {
      name: "another company's source → 404",
      method: "GET",
      get url() {
        return `/sources/${acmeSource}`;
      },
      status: 404,
    },
    {
      name: "another company's source by PATCH → 404",
      method: "PATCH",
      get url() {
        return `/sources/${acmeSource}`;
      },
      body: { name: "mine" },
      status: 404,
    },
    {
      name: "another company's source as a contact's → 422",
      method: "PUT",
      get url() {
        return `/contacts/${ownContact}/source`;
      },
      get body() {
        return { sourceId: acmeSource };
      },
      status: 422,
    },
    { name: "another company's contact → 404", method: "GET", url: "/contacts/0193a4b2-0000-7000-8000-00000000fffe/source", status: 404 },
    {
      name: "read key cannot write → 403",
      method: "POST",
      url: "/sources",
      get key() {
        return readKey;
      },
      body: { name: "x", type: "link", channel: "whatsapp" },
      status: 403,
      contains: { error: { code: "API_SCOPE_MISSING" } },
    },
    {
      name: "read key reads",
      method: "GET",
      url: "/sources",
      get key() {
        return readKey;
      },
      status: 200,
    },
    {
      name: "no scope → 403",
      method: "GET",
      url: "/sources",
      get key() {
        return noScopeKey;
      },
      status: 403,
    },
  ];
  runScenarios(() => app, scenarios);

  test("the lists never show another company's sources", async () => {
    const ids = (await app.request("GET", "/sources?limit=200")).body.data.map((s: { id: string }) => s.id);
    expect(ids).not.toContain(acmeSource);
  });

  test("without the license: 403 LICENSE_NOT_FOUND, FEATURE_NOT_LICENSED, LICENSE_EXPIRED", async () => {
    const code = async () => (await app.request("GET", "/sources")).body.error?.code;
    writeLicense(["pipeline"]);
    expect(await code()).toBe("FEATURE_NOT_LICENSED");
    writeLicense(["sources"], "default", "2020-01-01T00:00:00.000Z");
    expect(await code()).toBe("LICENSE_EXPIRED");
    writeLicense(["sources"], "acme");
    expect(await code()).toBe("LICENSE_NOT_FOUND");
    writeLicense(["sources"]);
    expect((await app.request("GET", `/contacts/${ownContact}/source`)).status).toBe(200);
  });
});

/** Draws qrcode's SVG (a path of `M x y h n` runs, stroke 1) into a bitmap, `scale` pixels per module. */
function rasterizeSvg(svg: string, scale: number): { data: Uint8ClampedArray; width: number; height: number } {
  const size = Number(/viewBox="0 0 (\d+) \d+"/.exec(svg)![1]);
  const d = [...svg.matchAll(/<path[^>]*stroke="[^"]*"[^>]*d="([^"]+)"/g)].map((m) => m[1]!).join("");
  const dark = new Set<string>();
  let x = 0;
  let y = 0;
  for (const [, cmd, a, b] of d.matchAll(/([MmHhVv])\s*(-?[\d.]+)(?:[ ,](-?[\d.]+))?/g)) {
    if (cmd === "M") [x, y] = [Number(a), Number(b)];
    else if (cmd === "m") [x, y] = [x + Number(a), y + Number(b)];
    else if (cmd === "h") {
      for (let i = 0; i < Number(a); i++) dark.add(`${x + i},${Math.floor(y)}`);
      x += Number(a);
    } else if (cmd === "v") {
      for (let i = 0; i < Number(a); i++) dark.add(`${Math.floor(x)},${y + i}`);
      y += Number(a);
    }
  }
  const width = size * scale;
  const data = new Uint8ClampedArray(width * width * 4).fill(255);
  for (let py = 0; py < width; py++)
    for (let px = 0; px < width; px++)
      if (dark.has(`${Math.floor(px / scale)},${Math.floor(py / scale)}`)) data.fill(0, (py * width + px) * 4, (py * width + px) * 4 + 3);
  return { data, width, height: width };
}
