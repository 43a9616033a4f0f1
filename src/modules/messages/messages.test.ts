/** POST /messages: every seed rule per channel, through the real app (table-driven), plus the lifecycle. */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createTestApp, ACCOUNTS, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { rowsOf, runScenarios } from "../../../test/helpers/scenarios";
import { balanceOf, eventsOf, inbound } from "../../../test/helpers/messaging";
import { createLedger } from "../billing/ledger.service";
import { modulesOf } from "../../assembly";
import { SCHEDULED_INBOUND_JOB } from "./messages.jobs";

const HOUR = 3_600_000;
const hello = { name: "hello_world", params: { "body.1": "Ann" } };
/** What the dispatch job of `t` runs with (src/assembly.ts hands the messages module the same). */
const dispatchNeeds = (t: TestApp) => ({ ...t.deps, unsubscribeLinks: modulesOf(t.deps).unsubscribe.service.load });

describe("POST /messages rules", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({
      start: new Date("2026-06-01T12:00:00Z"),
      config: {
        channels: [
          ...sandboxChannels(),
          { id: "0193a4b2-0000-7000-8000-0000000000b1", channel: "email", provider: "sandbox", name: "second mailbox", default: false, settings: {} },
          { id: "0193a4b2-0000-7000-8000-0000000000b2", channel: "whatsapp", provider: "sandbox", name: "second number", default: false, settings: {} },
        ],
      },
    });
    // Contacts who wrote in at various times.
    await inbound(app, "whatsapp", { phone: "+14155550101" }, "hi", 1 * HOUR);
    await inbound(app, "whatsapp", { phone: "+14155550102" }, "hi", 25 * HOUR);
    await inbound(app, "instagram", { handle: "ig_recent" }, "hi", 23 * HOUR);
    await inbound(app, "instagram", { handle: "ig_old" }, "hi", 25 * HOUR);
    await inbound(app, "messenger", { handle: "psid_old" }, "hi", 25 * HOUR);
    await inbound(app, "tiktok", { handle: "tt_47h" }, "hi", 47 * HOUR);
    await inbound(app, "tiktok", { handle: "tt_49h" }, "hi", 49 * HOUR);
    await inbound(app, "telegram", { handle: "1001" }, "hi", 30 * 24 * HOUR);
    await inbound(app, "x", { handle: "2002" }, "hi", 30 * 24 * HOUR);
  });
  afterAll(() => app.close());

  const template = (channel: string, to: object, extra: object = {}) => ({ channel, to, type: "template", template: hello, ...extra });

  runScenarios(
    () => app,
    rowsOf("POST", "/messages", [
      // WhatsApp
      {
        name: "whatsapp template to a new number: 202 queued, priced wa_template_text, charged",
        body: template("whatsapp", { phone: "+14155550199" }, { metadata: { orderId: "A1" } }),
        status: 202,
        contains: {
          data: { status: "queued", channel: "whatsapp", priceType: "wa_template_text", unitPrice: "0.050000", charged: true, metadata: { orderId: "A1" } },
        },
        check: (r) =>
          expect(Object.keys(r.body.data).sort()).toEqual([
            "channel",
            "charged",
            "contactId",
            "conversationId",
            "id",
            "metadata",
            "priceType",
            "status",
            "unitPrice",
          ]),
      },
      {
        name: "whatsapp text without any inbound: 422 MESSAGING_WINDOW_CLOSED",
        body: { channel: "whatsapp", to: { phone: "+14155550198" }, type: "text", text: "hi" },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "whatsapp text 1 h after the contact wrote: free",
        body: { channel: "whatsapp", to: { phone: "+1 415 555 0101" }, type: "text", text: "hi" },
        status: 202,
        contains: { data: { priceType: "free", unitPrice: "0.000000", charged: false } },
      },
      {
        name: "whatsapp media 1 h after: free",
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { url: "https://cdn.example/a.jpg" } },
        status: 202,
        contains: { data: { charged: false } },
      },
      {
        name: "whatsapp text 25 h after: 422 MESSAGING_WINDOW_CLOSED",
        body: { channel: "whatsapp", to: { phone: "+14155550102" }, type: "text", text: "hi" },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      { name: "whatsapp template 25 h after: allowed", method: "POST", url: "/messages", body: template("whatsapp", { phone: "+14155550102" }), status: 202 },
      {
        name: "whatsapp text over 4096 characters: 422 /text",
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "x".repeat(4097) },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/text" }] } },
      },
      {
        name: "invalid phone number: 422 /to/phone",
        body: template("whatsapp", { phone: "12" }),
        status: 422,
        contains: { error: { details: [{ pointer: "/to/phone" }] } },
      },
      {
        name: "createContact false and unknown phone: 404",
        body: template("whatsapp", { phone: "+14155550177" }, { createContact: false }),
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
      {
        name: "unknown contactId: 404",
        body: template("whatsapp", { contactId: "0193a4b2-0000-7000-8000-00000000ffff" }),
        status: 404,
      },
      {
        name: "non-default whatsapp account: 422 /channelAccountId",
        body: template("whatsapp", { phone: "+14155550199" }, { channelAccountId: "0193a4b2-0000-7000-8000-0000000000b2" }),
        status: 422,
        contains: { error: { details: [{ pointer: "/channelAccountId" }] } },
      },
      {
        name: "email address on whatsapp: 422 /to/email",
        body: template("whatsapp", { email: "a@b.co" }),
        status: 422,
        contains: { error: { details: [{ pointer: "/to/email" }] } },
      },
      // Instagram / Messenger / TikTok
      {
        name: "instagram text 23 h after: free",
        body: { channel: "instagram", to: { handle: "ig_recent" }, type: "text", text: "hi" },
        status: 202,
        contains: { data: { charged: false } },
      },
      {
        name: "instagram template 25 h after: window applies to templates too",
        body: template("instagram", { handle: "ig_old" }),
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "instagram text over 1000 characters: 422",
        body: { channel: "instagram", to: { handle: "ig_recent" }, type: "text", text: "x".repeat(1001) },
        status: 422,
        contains: { error: { details: [{ pointer: "/text" }] } },
      },
      {
        name: "messenger 25 h after: 422 window",
        body: { channel: "messenger", to: { handle: "psid_old" }, type: "text", text: "hi" },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "messenger text over 2000 characters: 422",
        body: { channel: "messenger", to: { handle: "psid_old" }, type: "text", text: "x".repeat(2001) },
        status: 422,
      },
      {
        name: "tiktok 47 h after: free reply",
        body: { channel: "tiktok", to: { handle: "tt_47h" }, type: "text", text: "hi" },
        status: 202,
        contains: { data: { unitPrice: "0.000000" } },
      },
      {
        name: "tiktok 49 h after: 422 window",
        body: { channel: "tiktok", to: { handle: "tt_49h" }, type: "text", text: "hi" },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "tiktok text over 6000 characters: 422",
        body: { channel: "tiktok", to: { handle: "tt_47h" }, type: "text", text: "x".repeat(6001) },
        status: 422,
      },
      // Telegram
      {
        name: "telegram: bot cannot start a conversation",
        body: { channel: "telegram", to: { handle: "1009" }, type: "text", text: "hi" },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "telegram text a month after the contact wrote: no window, free",
        body: { channel: "telegram", to: { handle: "1001" }, type: "text", text: "hi" },
        status: 202,
        contains: { data: { priceType: "free", charged: false } },
      },
      {
        name: "telegram template: tg_text",
        body: template("telegram", { handle: "1001" }),
        status: 202,
        contains: { data: { priceType: "tg_text", unitPrice: "0.002000", charged: true } },
      },
      {
        name: "telegram template with header media: tg_media",
        body: { channel: "telegram", to: { handle: "1001" }, type: "template", template: { ...hello, headerMediaUrl: "https://cdn.example/p.png" } },
        status: 202,
        contains: { data: { priceType: "tg_media", unitPrice: "0.004000" } },
      },
      // X
      {
        name: "x without a prior DM conversation: 422",
        body: { channel: "x", to: { handle: "2009" }, type: "text", text: "hi" },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "x template after a DM conversation: x_dm_campaign",
        body: template("x", { handle: "2002" }),
        status: 202,
        contains: { data: { priceType: "x_dm_campaign", unitPrice: "0.010000" } },
      },
      {
        name: "x text over 10,000 characters: 422",
        body: { channel: "x", to: { handle: "2002" }, type: "text", text: "x".repeat(10_001) },
        status: 422,
      },
      // E-mail
      {
        name: "email with two accounts and none named: 422 CHANNEL_ACCOUNT_MISSING",
        body: { channel: "email", to: { email: "ann@example.com" }, type: "email", email: { subject: "Hi", text: "Hello" } },
        status: 422,
        contains: { error: { code: "CHANNEL_ACCOUNT_MISSING" } },
      },
      {
        name: "email type email with an account: free, no window",
        body: {
          channel: "email",
          channelAccountId: "0193a4b2-0000-7000-8000-0000000000b1",
          to: { email: "Ann@Example.com" },
          type: "email",
          email: { subject: "Hi", html: "<p>Hello</p>" },
        },
        status: 202,
        contains: { data: { priceType: "free", charged: false } },
      },
      {
        name: "email template: email_campaign",
        body: { channel: "email", channelAccountId: ACCOUNTS.email, to: { email: "ann@example.com" }, type: "template", template: hello },
        status: 202,
        contains: { data: { priceType: "email_campaign", unitPrice: "0.001000" } },
      },
      {
        name: "email without html or text: 422 /email",
        body: { channel: "email", channelAccountId: ACCOUNTS.email, to: { email: "ann@example.com" }, type: "email", email: { subject: "x" } },
        status: 422,
        contains: { error: { details: [{ pointer: "/email" }] } },
      },
      {
        name: "type email on whatsapp: 422 /type",
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "email", email: { text: "x" } },
        status: 422,
        contains: { error: { details: [{ pointer: "/type" }] } },
      },
      {
        name: "type text on email: 422 /type",
        body: { channel: "email", channelAccountId: ACCOUNTS.email, to: { email: "ann@example.com" }, type: "text", text: "x" },
        status: 422,
        contains: { error: { details: [{ pointer: "/type" }] } },
      },
      // Body shape
      {
        name: "to without any field: 422 /to",
        body: { channel: "whatsapp", to: {}, type: "template", template: hello },
        status: 422,
        contains: { error: { details: [{ pointer: "/to" }] } },
      },
      {
        name: "media with both mediaId and url: 422 /media",
        body: {
          channel: "whatsapp",
          to: { phone: "+14155550101" },
          type: "media",
          media: { mediaId: "0193a4b2-0000-7000-8000-00000000ffff", url: "https://x.example/a.jpg" },
        },
        status: 422,
        contains: { error: { details: [{ pointer: "/media" }] } },
      },
      // Media URLs that could never be fetched (DESIGN §23): refused at acceptance, before anything is charged
      ...[
        ["file:", "file:///etc/passwd", "must use http or https"],
        ["data:", "data:image/png;base64,iVBORw0KGgo=", "must use http or https"],
        ["loopback", "http://127.0.0.1:8080/a.png", "its host is a loopback address"],
        ["link-local", "http://169.254.169.254/latest/meta-data/a.png", "its host is a link-local address"],
        ["IPv4-mapped link-local", "http://[::ffff:169.254.169.254]/a.png", "its host is a link-local address"],
        ["metadata name", "http://metadata.google.internal/a.png", "its host is a cloud metadata service"],
      ].flatMap(([what, url, why]) => [
        {
          name: `media.url ${what}: 422 /media/url`,
          method: "POST",
          url: "/messages",
          body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { url } },
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/media/url", message: `URL not allowed: ${why}` }] } },
        },
        {
          name: `template.headerMediaUrl ${what}: 422 /template/headerMediaUrl`,
          method: "POST",
          url: "/messages",
          body: template("telegram", { handle: "1001" }, { template: { ...hello, headerMediaUrl: url } }),
          status: 422,
          contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/template/headerMediaUrl", message: `URL not allowed: ${why}` }] } },
        },
      ]),
      {
        name: "unknown mediaId: 422 /media/mediaId",
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { mediaId: "0193a4b2-0000-7000-8000-00000000ffff" } },
        status: 422,
        contains: { error: { details: [{ pointer: "/media/mediaId" }] } },
      },
      {
        name: "template by id and name: 422 /template",
        body: template("whatsapp", { phone: "+14155550101" }, { template: { ...hello, templateId: "0193a4b2-0000-7000-8000-00000000ffff" } }),
        status: 422,
        contains: { error: { details: [{ pointer: "/template" }] } },
      },
      {
        name: "unknown template name: 422 /template/name",
        body: template("whatsapp", { phone: "+14155550101" }, { template: { name: "nope" } }),
        status: 422,
        contains: { error: { details: [{ pointer: "/template/name" }] } },
      },
      {
        name: "missing template param: 422 /template/params/body.1",
        body: template("whatsapp", { phone: "+14155550101" }, { template: { name: "hello_world" } }),
        status: 422,
        contains: { error: { details: [{ pointer: "/template/params/body.1" }] } },
      },
      {
        name: "unknown template param: 422 pointer to it",
        body: template("whatsapp", { phone: "+14155550101" }, { template: { name: "hello_world", params: { "body.1": "a", "body.2": "b" } } }),
        status: 422,
        contains: { error: { details: [{ pointer: "/template/params/body.2" }] } },
      },
      {
        name: "metadata over the limits: one pointer per problem",
        body: template("whatsapp", { phone: "+14155550101" }, { metadata: { ["k".repeat(41)]: "v", long: "v".repeat(501) } }),
        status: 422,
        check: (r) =>
          expect(r.body.error.details.map((d: any) => d.pointer).sort()).toEqual(["/metadata/kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", "/metadata/long"]),
      },
      {
        name: "21 metadata keys: 422 /metadata",
        body: template("whatsapp", { phone: "+14155550101" }, { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])) }),
        status: 422,
        contains: { error: { details: [{ pointer: "/metadata" }] } },
      },
      {
        name: "unknown channel: 422 /channel",
        body: { channel: "fax", to: { phone: "+14155550101" }, type: "text", text: "x" },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED" } },
      },
      {
        name: "malformed JSON: 422",
        raw: "{nope",
        headers: { "content-type": "application/json" },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED" } },
      },
      {
        name: "GET unknown message: 404",
        method: "GET",
        url: "/messages/0193a4b2-0000-7000-8000-00000000ffff",
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
    ]),
  );

  test("a key without messages:send gets 403 API_SCOPE_MISSING", async () => {
    const { key } = await app.newKey({ scopes: ["messages:read"] });
    const r = await app.request("POST", "/messages", { key, body: template("whatsapp", { phone: "+14155550199" }) });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("API_SCOPE_MISSING");
  });

  test("blocked contact and opted-out identity: 422 CONTACT_BLOCKED", async () => {
    const c = await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+14155550150" }] } });
    const id = c.body.data.contact.id;
    const r1 = await app.request("POST", `/contacts/${id}/opt-out`, { body: { channels: ["whatsapp"] } });
    expect(r1.status).toBe(200);
    const r = await app.request("POST", "/messages", { body: template("whatsapp", { contactId: id }) });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("CONTACT_BLOCKED");
    await app.deps.db.sql("UPDATE contacts SET blocked = 1 WHERE id = ?").run(id);
    await app.request("POST", `/contacts/${id}/opt-in`, { body: { channels: ["whatsapp"] } });
    expect((await app.request("POST", "/messages", { body: template("whatsapp", { contactId: id }) })).body.error.code).toBe("CONTACT_BLOCKED");
  });

  test("x daily DM limit: 429 RATE_LIMITED with Retry-After until 00:00 UTC", async () => {
    const a = await createTestApp({
      start: new Date("2026-06-01T23:00:00Z"),
      config: { channels: sandboxChannels().map((c) => (c.channel === "x" ? { ...c, settings: { ...c.settings, daily_dm_limit: 2 } } : c)) },
    });
    try {
      await inbound(a, "x", { handle: "3003" });
      const send = () => a.request("POST", "/messages", { body: { channel: "x", to: { handle: "3003" }, type: "text", text: "hi" } });
      expect((await send()).status).toBe(202);
      expect((await send()).status).toBe(202);
      const limited = await send();
      expect(limited.status).toBe(429);
      expect(limited.body.error.code).toBe("RATE_LIMITED");
      expect(limited.headers.get("retry-after")).toBe("3600");
      a.clock.advance(3_600_000);
      expect((await send()).status).toBe(202);
    } finally {
      await a.close();
    }
  });
});

describe("billing", () => {
  test("insufficient balance: 402 and nothing stored", async () => {
    const a = await createTestApp({ balance: "0.040000" });
    try {
      const r = await a.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550111" }, type: "template", template: hello } });
      expect(r.status).toBe(402);
      expect(r.body.error.code).toBe("INSUFFICIENT_BALANCE");
      expect(((await a.deps.db.sql("SELECT count(*) AS n FROM messages").get()) as any).n).toBe(0);
      expect(((await a.deps.db.sql("SELECT count(*) AS n FROM contacts").get()) as any).n).toBe(0);
      expect(await balanceOf(a)).toBe("0.040000");
    } finally {
      await a.close();
    }
  });

  test("concurrent overdraw: balance for 5, 20 parallel sends → exactly 5 accepted, balance 0", async () => {
    const a = await createTestApp({ balance: "0.250000" });
    try {
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          a.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: `+1415555${String(1000 + i)}` }, type: "template", template: hello } }),
        ),
      );
      expect(results.filter((r) => r.status === 202)).toHaveLength(5);
      expect(results.filter((r) => r.status === 402)).toHaveLength(15);
      expect(await balanceOf(a)).toBe("0.000000");
      // The refused sends shared group commits with accepted ones (which then ran a second time, isolated):
      // each accepted send is one message, one conversation, sent once.
      const accepted = results
        .filter((r) => r.status === 202)
        .map((r) => r.body.data.id as string)
        .sort();
      const stored = ((await a.deps.db.sql("SELECT id FROM messages ORDER BY id").all()) as { id: string }[]).map((r) => r.id);
      expect(stored).toEqual(accepted);
      expect(Number(((await a.deps.db.sql("SELECT count(*) AS n FROM conversations").get()) as { n: number }).n)).toBe(5);
      await a.deps.queue.drain();
      const sent = a.emitted.filter((e) => e.type === "message.sent").map((e) => (e.data as { message: { id: string } }).message.id);
      expect(sent.sort()).toEqual(accepted);
      const ledger = await a.request("GET", "/billing/ledger?limit=200");
      expect(ledger.body.data.filter((e: any) => e.kind === "debit")).toHaveLength(5);
      expect(ledger.body.data.every((e: any) => Number(e.balanceAfter) >= 0)).toBe(true);
    } finally {
      await a.close();
    }
  });

  test("the balance a debit starts from: never one of a rolled-back debit, always one with another process's credit", async () => {
    const a = await createTestApp({ balance: "1.000000" });
    try {
      const { ledger } = a.deps;
      const companyId = a.company.id;
      await ledger.debit({ companyId, amount: 100_000, messageId: null, description: "kept" }); // 0.9 left
      // A debit inside a transaction that rolls back afterwards (a group item that fails after its debit).
      await expect(
        a.deps.db.unit(async () => {
          await ledger.debit({ companyId, amount: 300_000, messageId: null, description: "undone" });
          throw new Error("later step failed");
        }),
      ).rejects.toThrow("later step failed");
      expect((await ledger.debit({ companyId, amount: 100_000, messageId: null, description: "next" })).balanceAfter).toBe(800_000);
      // A credit committed by another connection (the `balance credit` CLI, another instance).
      const other = a.openConnection();
      try {
        await a.externalCommit(() => createLedger({ db: other, now: () => new Date() }).credit({ companyId, amount: 5_000_000 }));
      } finally {
        other.close();
      }
      expect((await ledger.debit({ companyId, amount: 100_000, messageId: null, description: "after credit" })).balanceAfter).toBe(5_700_000);
      // Debits made at once each start from the one before (SQLite: one group commit, in order; PostgreSQL: units
      // side by side, each waiting for the balance row the one before holds, in whatever order they reach it).
      const after = await Promise.all(
        [1, 2, 3].map(() =>
          a.deps.db.batch(async () => (await ledger.debit({ companyId, amount: 1_000_000, messageId: null, description: "grouped" })).balanceAfter),
        ),
      );
      if (a.deps.db.engine === "sqlite") expect(after).toEqual([4_700_000, 3_700_000, 2_700_000]);
      else expect(after.toSorted((x, y) => y - x)).toEqual([4_700_000, 3_700_000, 2_700_000]);
      expect(await balanceOf(a)).toBe("2.700000");
    } finally {
      await a.close();
    }
  });

  test("a priced message that fails before sent is refunded by a ledger entry", async () => {
    const a = await createTestApp();
    try {
      const r = await a.request("POST", "/messages", {
        body: { channel: "telegram", to: { handle: "fail_7" }, type: "template", template: hello },
        headers: {},
      });
      // Telegram needs the contact to have written first.
      expect(r.status).toBe(422);
      await inbound(a, "telegram", { handle: "fail_7" });
      const s = await a.request("POST", "/messages", { body: { channel: "telegram", to: { handle: "fail_7" }, type: "template", template: hello } });
      expect(s.status).toBe(202);
      expect(await balanceOf(a)).toBe("99.998000");
      await a.deps.queue.drain();
      const m = await a.request("GET", `/messages/${s.body.data.id}`);
      expect(m.body.data).toMatchObject({ status: "failed", refunded: true, error: { reason: "PROVIDER_REJECTED" } });
      expect(await balanceOf(a)).toBe("100.000000");
      const ledger = (await a.request("GET", "/billing/ledger")).body.data;
      expect(ledger[0]).toMatchObject({ kind: "refund", amount: "0.002000", messageId: s.body.data.id });
    } finally {
      await a.close();
    }
  });
});

describe("lifecycle", () => {
  let a: TestApp;
  beforeEach(async () => {
    a = await createTestApp({ config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 0, read_after_ms: 0 }) } });
  });
  afterEach(() => a.close());

  test("queued → sent → delivered → read, each stored with its time and emitted with the metadata", async () => {
    const s = await a.request("POST", "/messages", {
      body: { channel: "whatsapp", to: { phone: "+14155550121" }, type: "template", template: hello, metadata: { orderId: "42" } },
    });
    expect(s.status).toBe(202);
    await a.deps.queue.drain();
    for (let i = 0; i < 50 && (await a.request("GET", `/messages/${s.body.data.id}`)).body.data.status !== "read"; i++) await Bun.sleep(10);
    const m = (await a.request("GET", `/messages/${s.body.data.id}`)).body.data;
    expect(m).toMatchObject({
      status: "read",
      direction: "outbound",
      type: "template",
      metadata: { orderId: "42" },
      providerMessageId: `sandbox.${m.id}`,
      error: null,
    });
    expect(m.statusTimes.queuedAt && m.statusTimes.sentAt && m.statusTimes.deliveredAt && m.statusTimes.readAt).toBeTruthy();
    const types = eventsOf(a)
      .filter((e) => e.type.startsWith("message."))
      .map((e) => e.type);
    expect(types).toEqual(["message.sent", "message.delivered", "message.read"]);
    expect(eventsOf(a, "message.read")[0]!.data.message.metadata).toEqual({ orderId: "42" });
  });

  test("Telegram USER_BLOCKED: message.failed with the reason, Telegram consent removed, next send refused", async () => {
    await inbound(a, "telegram", { handle: "blocked_42" });
    const s = await a.request("POST", "/messages", {
      body: { channel: "telegram", to: { handle: "blocked_42" }, type: "text", text: "hi", metadata: { k: "v" } },
    });
    expect(s.status).toBe(202);
    await a.deps.queue.drain();
    const m = (await a.request("GET", `/messages/${s.body.data.id}`)).body.data;
    expect(m).toMatchObject({ status: "failed", error: { reason: "USER_BLOCKED" } });
    const failed = eventsOf(a, "message.failed");
    expect(failed).toHaveLength(1);
    expect(failed[0]!.data.message).toMatchObject({ id: m.id, metadata: { k: "v" }, error: { reason: "USER_BLOCKED" } });
    const contact = (await a.request("GET", `/contacts/${m.contactId}`)).body.data;
    expect(contact.consent.telegram.status).toBe("opted_out");
    const again = await a.request("POST", "/messages", { body: { channel: "telegram", to: { handle: "blocked_42" }, type: "text", text: "hi" } });
    expect(again.body.error.code).toBe("CONTACT_BLOCKED");
  });

  test("a message that failed while its send was in flight stays failed: the send's result does not overwrite it", async () => {
    const s = await a.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550125" }, type: "template", template: hello } });
    const { applyStatus } = await import("./messages.lifecycle");
    const { dispatchMessage } = await import("./messages.dispatch");
    const { messageById } = await import("./messages.repository");
    const rt = a.deps.channels.get(ACCOUNTS.whatsapp)!;
    const original = rt.adapter.send;
    rt.adapter.send = async (m) => {
      // Meanwhile (another writer): the message fails.
      const meanwhile = (await messageById(a.deps.db, s.body.data.id))!;
      await a.deps.db.unit(() =>
        applyStatus(a.deps, {
          message: meanwhile,
          status: "failed",
          at: a.deps.now(),
          error: { reason: "PROVIDER_REJECTED", message: "meanwhile" },
        }),
      );
      return original(m);
    };
    try {
      const outcome = await dispatchMessage(dispatchNeeds(a), {
        id: "j",
        type: "message.dispatch",
        payload: { messageId: s.body.data.id },
        attempts: 1,
        maxAttempts: 10,
        groupKey: null,
        runAt: 0,
        leaseToken: "t",
      });
      await a.deps.db.unit(() => (outcome as { writes: () => Promise<void> }).writes());
    } finally {
      rt.adapter.send = original;
    }
    const m = (await a.request("GET", `/messages/${s.body.data.id}`)).body.data;
    expect(m).toMatchObject({ status: "failed", error: { reason: "PROVIDER_REJECTED", message: "meanwhile" }, providerMessageId: null });
    expect(eventsOf(a, "message.sent").filter((e) => e.data.message.id === m.id)).toEqual([]);
  });

  test("a dispatched message is not sent twice when the job runs again", async () => {
    const s = await a.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550122" }, type: "template", template: hello } });
    await a.deps.queue.drain();
    const { dispatchMessage } = await import("./messages.dispatch");
    let sends = 0;
    const rt = a.deps.channels.get(ACCOUNTS.whatsapp)!;
    const original = rt.adapter.send;
    rt.adapter.send = async (m) => (sends++, original(m));
    await dispatchMessage(dispatchNeeds(a), {
      id: "j",
      type: "message.dispatch",
      payload: { messageId: s.body.data.id },
      attempts: 2,
      maxAttempts: 10,
      groupKey: null,
      runAt: 0,
      leaseToken: "t",
    });
    expect(sends).toBe(0);
  });
});

describe("status reports that fall due before their message is stored", () => {
  test("come back until it is (reports already applied stay applied); one never stored is dropped after 10 minutes", async () => {
    const b = await createTestApp(); // the sandbox reports an hour later: its own reports stay out of the way
    try {
      const send = async (phone: string) =>
        (await b.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone }, type: "template", template: hello } })).body.data.id as string;
      const first = await send("+14155550123");
      const second = await send("+14155550124");
      await b.deps.queue.drain();
      const statusOf = async (id: string) => ((await b.deps.db.sql("SELECT status FROM messages WHERE id = ?").get(id)) as { status: string }).status;
      const jobOf = async (providerId: string) =>
        (await b.deps.db
          .sql("SELECT status, run_at, last_error FROM jobs WHERE type = ? AND payload LIKE ?")
          .get(SCHEDULED_INBOUND_JOB, `%${providerId}%`)) as { status: string; run_at: number; last_error: string } | null;
      const report = async (providerIds: string[]) => {
        const at = b.clock.now().getTime();
        // (the job's JSON payload holds the timestamp as its ISO string)
        const events = providerIds.map((providerMessageId) => ({
          kind: "status" as const,
          providerMessageId,
          status: "delivered" as const,
          timestamp: new Date(at),
        }));
        await b.deps.db.unit(async () =>
          b.deps.queue.enqueueJob({ type: SCHEDULED_INBOUND_JOB, payload: { accountId: ACCOUNTS.whatsapp, schedule: [{ at, events }] }, runAt: new Date(at) }),
        );
      };

      await report([`sandbox.${first}`, "late-1"]);
      await b.deps.queue.drain();
      expect(await statusOf(first)).toBe("delivered"); // the known one at once
      expect(await jobOf("late-1")).toEqual({ status: "pending", run_at: b.clock.now().getTime() + 500, last_error: "reported message not stored yet" });
      // It comes back with the unknown report alone: the applied one is not looked up again.
      const left = JSON.parse(
        ((await b.deps.db.sql("SELECT payload FROM jobs WHERE type = ? AND payload LIKE ?").get(SCHEDULED_INBOUND_JOB, "%late-1%")) as { payload: string })
          .payload,
      );
      expect(left.schedule.flatMap((s: { events: { providerMessageId: string }[] }) => s.events.map((e) => e.providerMessageId))).toEqual(["late-1"]);

      // The send it reports on commits (as when a provider calls back before our commit of the send).
      await b.deps.db.sql("UPDATE messages SET provider_message_id = 'late-1' WHERE id = ?").run(second);
      b.clock.advance(500);
      await b.deps.queue.drain();
      expect(await statusOf(second)).toBe("delivered");
      expect(await jobOf("late-1")).toBeNull();
      expect(eventsOf(b, "message.delivered").map((e) => e.data.message.id)).toEqual([first, second]); // the first not twice

      await report(["never-1"]);
      let retries = 0;
      for (; (await jobOf("never-1")) && retries < 100; retries++) {
        b.clock.advance(60_000);
        await b.deps.queue.drain();
      }
      expect(await jobOf("never-1")).toBeNull();
      expect(retries).toBeGreaterThanOrEqual(10);
      expect(retries).toBeLessThanOrEqual(12);
    } finally {
      await b.close();
    }
  });
});

test("the later reports of sends committed together share jobs of at most 25 sends, due on the 25 ms step at or after their time", async () => {
  const b = await createTestApp({ config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 1_010, read_after_ms: 0 }) } });
  try {
    const ids: string[] = [];
    for (let i = 0; i < 30; i++)
      ids.push(
        (
          await b.request("POST", "/messages", {
            body: { channel: "whatsapp", to: { phone: `+1415555${String(1000 + i)}` }, type: "template", template: hello },
          })
        ).body.data.id,
      );
    const { dispatchMessage } = await import("./messages.dispatch");
    const outcomes = await Promise.all(
      ids.map((messageId) =>
        dispatchMessage(dispatchNeeds(b), {
          id: messageId,
          type: "message.dispatch",
          payload: { messageId },
          attempts: 1,
          maxAttempts: 10,
          groupKey: null,
          runAt: 0,
          leaseToken: "t",
        }),
      ),
    );
    const sentAt = b.clock.now().getTime();
    // One commit, as a group's outcomes (each awaited in turn, as the queue does).
    await b.deps.db.unit(async () => {
      for (const o of outcomes) await (o as { writes: () => Promise<void> }).writes();
    });
    const jobs = (
      (await b.deps.db.sql("SELECT run_at, payload FROM jobs WHERE type = ? ORDER BY run_at").all(SCHEDULED_INBOUND_JOB)) as {
        run_at: number;
        payload: string;
      }[]
    ).map((j) => ({
      runAt: j.run_at,
      schedule: JSON.parse(j.payload).schedule as { at: number; events: { providerMessageId: string; status: string }[] }[],
    }));
    // Delivered and read of 25 sends, then of 5. Units side by side (Bun.SQL): no group commit to share
    // (write-behind writes through, db/write-behind.ts), so each send's reports are a job of their own.
    expect(jobs.map((j) => j.schedule.flatMap((s) => s.events).length)).toEqual(b.deps.db.concurrentUnits ? ids.map(() => 2) : [50, 10]);
    const due = Math.ceil((sentAt + 1_010) / 25) * 25;
    for (const j of jobs) expect(j).toMatchObject({ runAt: due, schedule: [{ at: due }] }); // read 0 ms after delivered: one entry
    expect(jobs.flatMap((j) => j.schedule.flatMap((s) => s.events.map((e) => e.providerMessageId))).sort()).toEqual(
      ids.flatMap((id) => [`sandbox.${id}`, `sandbox.${id}`]).sort(),
    );

    const status = async () =>
      new Set(
        await Promise.all(ids.map(async (id) => ((await b.deps.db.sql("SELECT status FROM messages WHERE id = ?").get(id)) as { status: string }).status)),
      );
    b.clock.set(new Date(due - 1)); // never early
    await b.deps.queue.drain();
    expect(await status()).toEqual(new Set(["sent"]));
    b.clock.set(new Date(due));
    await b.deps.queue.drain();
    expect(await status()).toEqual(new Set(["read"]));
    expect(Number(((await b.deps.db.sql("SELECT count(*) AS n FROM jobs WHERE type = ?").get(SCHEDULED_INBOUND_JOB)) as { n: number }).n)).toBe(0);
  } finally {
    await b.close();
  }
});

describe("idempotency and crash recovery", () => {
  test("10 parallel duplicates with one Idempotency-Key → one message, replays carry Idempotent-Replayed", async () => {
    const a = await createTestApp();
    try {
      const body = { channel: "whatsapp", to: { phone: "+14155550131" }, type: "template", template: hello };
      const results = await Promise.all(Array.from({ length: 10 }, () => a.request("POST", "/messages", { body, headers: { "idempotency-key": "order-77" } })));
      const ok = results.filter((r) => r.status === 202);
      expect(ok.length + results.filter((r) => r.status === 409).length).toBe(10);
      expect(new Set(ok.map((r) => r.body.data.id)).size).toBe(1);
      expect(((await a.deps.db.sql("SELECT count(*) AS n FROM messages").get()) as any).n).toBe(1);
      const replay = await a.request("POST", "/messages", { body, headers: { "idempotency-key": "order-77" } });
      expect(replay.status).toBe(202);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.body.data.id).toBe(ok[0]!.body.data.id);
      const conflict = await a.request("POST", "/messages", { body: { ...body, metadata: { x: "y" } }, headers: { "idempotency-key": "order-77" } });
      expect(conflict.status).toBe(409);
      expect(conflict.body.error.code).toBe("IDEMPOTENCY_CONFLICT");
      expect(await balanceOf(a)).toBe("99.950000");
      // Errors are not stored: a failed request with a key can be retried with the same key.
      const bad = await a.request("POST", "/messages", { body: { ...body, to: { phone: "1" } }, headers: { "idempotency-key": "order-78" } });
      expect(bad.status).toBe(422);
      expect((await a.request("POST", "/messages", { body, headers: { "idempotency-key": "order-78" } })).status).toBe(202);
    } finally {
      await a.close();
    }
  });

  test("a crash with a leased dispatch job loses nothing: after restart the message is sent once", async () => {
    const first = await createTestApp();
    const dir = first.dir;
    const s = await first.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550141" }, type: "template", template: hello } });
    // Simulate a crash mid-dispatch: the job is claimed (leased) and the process dies before finishing.
    await first.deps.db
      .sql("UPDATE jobs SET status = 'running', lease_until = ?1, run_at = ?1, lease_token = 'dead-worker', attempts = 1")
      .run(first.clock.now().getTime() + 60_000);
    first.deps.db.close(); // no graceful shutdown

    const second = await createTestApp({ dataDir: dir, start: new Date(first.clock.now().getTime() + 61_000) });
    try {
      const sends: string[] = [];
      const rt = second.deps.channels.get(ACCOUNTS.whatsapp)!;
      const original = rt.adapter.send;
      rt.adapter.send = async (m) => (sends.push(m.messageId), original(m));
      await second.deps.queue.drain();
      await second.deps.queue.drain();
      expect(sends).toEqual([s.body.data.id]);
      expect((await second.request("GET", `/messages/${s.body.data.id}`)).body.data.status).toBe("sent");
    } finally {
      await second.close();
    }
  });
});
