import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, type TestContext } from "../../../test/fakes/adapter-context";
import { GraphFake, messengerPayloads, type RecordedFile } from "../../../test/fakes/graph.fake";
import type { ChannelAdapter, OutboundMessage } from "../channel.types";
import { expectForgedSignaturesRefused, expectHandshake } from "../../../test/helpers/meta-webhooks";
import { serveAdapterHooks, type TestHookServer } from "../meta/test-hook-server";
import { createMessengerAdapter, messengerProvider } from "./messenger.adapter";

const PAGE_ID = "104857600000001";
const PSID = "6543210987654321";
const TOKEN = "EAAB-page-token";
const APP_SECRET = "fb-app-secret";
const VERIFY = "fb-verify";

let fake: GraphFake;
let adapter: ChannelAdapter;
let hooks: TestHookServer;
let t: TestContext;
const dir = mkdtempSync(join(tmpdir(), "messenger-adapter-"));

const msg = (content: OutboundMessage["content"]): OutboundMessage => ({ messageId: "msg-1", to: { value: PSID }, content });

beforeAll(() => {
  fake = new GraphFake({ tokens: [TOKEN] });
  t = createTestContext({
    provider: "messenger",
    channel: "messenger",
    settings: { page_id: PAGE_ID, page_access_token: TOKEN, app_secret: APP_SECRET, verify_token: VERIFY, base_url: fake.url },
  });
  adapter = createMessengerAdapter(t.ctx);
  hooks = serveAdapterHooks(adapter);
});
afterEach(() => {
  fake.reset();
  hooks.results.length = 0;
  t.state.clear();
});
afterAll(async () => {
  hooks.stop();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("messenger provider definition", () => {
  test("channel, settings defaults and descriptions", () => {
    expect(messengerProvider.channels).toEqual(["messenger"]);
    expect(messengerProvider.settings.properties.base_url.default).toBe("https://graph.facebook.com/v23.0");
    for (const [key, schema] of Object.entries(messengerProvider.settings.properties)) {
      expect(typeof (schema as { description?: string }).description, key).toBe("string");
      expect((schema as { default?: unknown }).default, key).toBeDefined();
    }
    expect(adapter.capabilities).toMatchObject({ webhookAuth: "provider-signature", deliveryReceipts: true, readReceipts: true });
    expect(adapter.capabilities.media["image/jpeg"]).toBe(8 * 1024 * 1024);
    expect(adapter.capabilities.media["video/mp4"]).toBe(25 * 1024 * 1024);
  });
});

describe("outbound", () => {
  test("text: exact bytes, path, bearer token", async () => {
    const result = await adapter.send(msg({ type: "text", text: "hello" }));
    const req = fake.lastRequest!;
    expect(req.path).toBe(`/v23.0/${PAGE_ID}/messages`);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.query.get("access_token")).toBeNull();
    expect(new TextDecoder().decode(req.raw)).toBe(`{"recipient":{"id":"${PSID}"},"messaging_type":"RESPONSE","message":{"text":"hello"}}`);
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^m_/) });
  });

  test("template: sent as its rendered text", async () => {
    await adapter.send(
      msg({
        type: "template",
        template: { name: "hello_world", language: "en", components: [], params: { "body.1": "Ann" }, rendered: { text: "Hello Ann" } },
      }),
    );
    expect(fake.lastRequest!.body).toEqual({ recipient: { id: PSID }, messaging_type: "RESPONSE", message: { text: "Hello Ann" } });
  });

  test("media by URL: reusable attachment, caption follows as a text message", async () => {
    const result = await adapter.send(msg({ type: "media", media: { url: "https://cdn.example.com/a/shirt.png", caption: "New in" } }));
    expect(result.ok).toBe(true);
    expect(fake.requests.map((r) => r.body)).toEqual([
      {
        recipient: { id: PSID },
        messaging_type: "RESPONSE",
        message: { attachment: { type: "image", payload: { url: "https://cdn.example.com/a/shirt.png", is_reusable: true } } },
      },
      { recipient: { id: PSID }, messaging_type: "RESPONSE", message: { text: "New in" } },
    ]);
  });

  test("stored file: upload-and-send multipart (filedata), attachment_id returned for caching", async () => {
    const bytes = new Uint8Array([37, 80, 68, 70, 45, 49]);
    const path = join(dir, "menu.pdf");
    writeFileSync(path, bytes);
    const result = await adapter.send(
      msg({ type: "media", media: { file: { id: "m1", path, mimeType: "application/pdf", filename: "menu.pdf", size: bytes.length } } }),
    );
    expect(fake.requests).toHaveLength(1);
    const req = fake.lastRequest!;
    expect(req.path).toBe(`/v23.0/${PAGE_ID}/messages`);
    expect(req.headers["content-type"]).toStartWith("multipart/form-data");
    const form = req.body as Record<string, unknown>;
    expect(JSON.parse(form.recipient as string)).toEqual({ id: PSID });
    expect(form.messaging_type).toBe("RESPONSE");
    expect(JSON.parse(form.message as string)).toEqual({ attachment: { type: "file", payload: { is_reusable: true } } });
    const file = form.filedata as RecordedFile;
    expect(file).toMatchObject({ filename: "menu.pdf", type: "application/pdf" });
    expect([...file.bytes]).toEqual([...bytes]);
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^m_/), providerMediaId: expect.stringMatching(/^\d+$/) });
  });

  test("stored file with cached attachment id: JSON send with payload.attachment_id", async () => {
    const result = await adapter.send(
      msg({
        type: "media",
        media: { file: { id: "m2", path: "/nonexistent", mimeType: "video/mp4", filename: "v.mp4", size: 10, providerMediaId: "1857777774821032" } },
      }),
    );
    expect(fake.lastRequest!.body).toEqual({
      recipient: { id: PSID },
      messaging_type: "RESPONSE",
      message: { attachment: { type: "video", payload: { attachment_id: "1857777774821032" } } },
    });
    expect(result).toEqual({ ok: true, providerMessageId: expect.any(String) });
  });

  test("stored file over the 8 MB image limit → MEDIA_INVALID without a request", async () => {
    const path = join(dir, "huge.png");
    writeFileSync(path, new Uint8Array([137, 80]));
    const result = await adapter.send(
      msg({ type: "media", media: { file: { id: "m3", path, mimeType: "image/png", filename: "huge.png", size: 8 * 1024 * 1024 + 1 } } }),
    );
    expect(result).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });

  const failures = [
    { failure: { code: 551, subcode: 1545041 }, expected: { reason: "USER_BLOCKED", retry: false, providerCode: "551/1545041" } },
    { failure: { code: 10, subcode: 2018278 }, expected: { reason: "MESSAGING_WINDOW_CLOSED", retry: false, providerCode: "10/2018278" } },
    { failure: { code: 100, subcode: 2018001 }, expected: { reason: "RECIPIENT_INVALID", retry: false } },
    { failure: { code: 613 }, expected: { reason: "RATE_LIMITED", retry: true } },
    { failure: { code: 190 }, expected: { reason: "AUTH_FAILED", retry: false, accountStatus: "auth_failed" } },
  ] as const;
  for (const { failure, expected } of failures) {
    test(`Graph ${failure.code}${"subcode" in failure ? `/${failure.subcode}` : ""} → ${expected.reason}`, async () => {
      fake.failNext({ kind: "graph", ...failure });
      expect(await adapter.send(msg({ type: "text", text: "x" }))).toMatchObject({ ok: false, ...expected });
    });
  }
  test("network drop → retry PROVIDER_UNAVAILABLE", async () => {
    fake.failNext({ kind: "drop" });
    expect(await adapter.send(msg({ type: "text", text: "x" }))).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE" });
  });
});

describe("inbound webhooks", () => {
  const push = (payload: unknown) => fake.pushWebhook({ url: hooks.url, payload, appSecret: APP_SECRET });

  test("text message: PSID sender, epoch-ms timestamp, reply_to", async () => {
    const answer = await push(
      messengerPayloads.message({ accountId: PAGE_ID, senderId: PSID, mid: "m_abc", text: "hi there", timestamp: 1458692752478, replyTo: "m_prev" }),
    );
    expect(answer).toEqual({ status: 200, body: "EVENT_RECEIVED" });
    expect(hooks.events()).toEqual([
      {
        kind: "message",
        providerMessageId: "m_abc",
        from: { value: PSID },
        timestamp: new Date(1458692752478),
        content: { type: "text", text: "hi there" },
        inReplyTo: "m_prev",
      },
    ]);
  });

  test("attachments: one event each, kinds mapped, stickers recognised", async () => {
    await push(
      messengerPayloads.message({
        accountId: PAGE_ID,
        senderId: PSID,
        mid: "m_att",
        attachments: [
          { type: "image", payload: { url: "https://scontent.xx.fbcdn.net/a.jpg" } },
          { type: "file", payload: { url: "https://cdn.fbsbx.com/b.pdf" } },
          { type: "image", payload: { url: "https://scontent.xx.fbcdn.net/s.png", sticker_id: 369239263222822 } },
        ],
      }),
    );
    expect(hooks.events().map((e) => (e.kind === "message" ? [e.providerMessageId, e.content] : e))).toEqual([
      ["m_att", { type: "media", media: { kind: "image", url: "https://scontent.xx.fbcdn.net/a.jpg" } }],
      ["m_att#1", { type: "media", media: { kind: "document", url: "https://cdn.fbsbx.com/b.pdf" } }],
      ["m_att#2", { type: "media", media: { kind: "sticker", url: "https://scontent.xx.fbcdn.net/s.png" } }],
    ]);
  });

  test("echoes of our own messages are ignored", async () => {
    await push(messengerPayloads.message({ accountId: PAGE_ID, senderId: PSID, text: "from the page", isEcho: true }));
    expect(hooks.events()).toEqual([]);
  });

  test("delivery and read → watermarks", async () => {
    await push(messengerPayloads.delivery({ accountId: PAGE_ID, senderId: PSID, watermark: 1458668856253, mids: ["mid.1458668856218:ed81099e15d3f4f233"] }));
    await push(messengerPayloads.read({ accountId: PAGE_ID, senderId: PSID, watermark: 1458668856299 }));
    expect(hooks.events()).toEqual([
      { kind: "status", providerMessageId: "mid.1458668856218:ed81099e15d3f4f233", status: "delivered", timestamp: new Date(1458668856253) },
      { kind: "watermark", from: { value: PSID }, status: "delivered", watermark: new Date(1458668856253) },
      { kind: "watermark", from: { value: PSID }, status: "read", watermark: new Date(1458668856299) },
    ]);
  });

  test("a standalone referral is kept and attached to the sender's next message", async () => {
    const referral = { ref: "spring_sale", source: "SHORTLINK", type: "OPEN_THREAD" };
    await push(messengerPayloads.referral({ accountId: PAGE_ID, senderId: PSID, referral }));
    expect(hooks.events()).toEqual([]);
    await push(messengerPayloads.message({ accountId: PAGE_ID, senderId: PSID, mid: "m_after", text: "hi" }));
    expect(hooks.events()[0]).toMatchObject({ providerMessageId: "m_after", referral });
    await push(messengerPayloads.message({ accountId: PAGE_ID, senderId: PSID, mid: "m_later", text: "again" }));
    expect(hooks.events()[1]).not.toHaveProperty("referral");
  });

  test("postback (Get Started from an ad) → text message with postback.referral", async () => {
    const referral = { ref: "ad_42", ad_id: "6045246247433", source: "ADS", type: "OPEN_THREAD" };
    await push(
      messengerPayloads.postback({
        accountId: PAGE_ID,
        senderId: PSID,
        title: "Get Started",
        payload: "GET_STARTED",
        mid: "m_pb",
        timestamp: 1527459824,
        referral,
      }),
    );
    expect(hooks.events()).toEqual([
      {
        kind: "message",
        providerMessageId: "m_pb",
        from: { value: PSID },
        timestamp: new Date(1527459824),
        content: { type: "text", text: "Get Started" },
        referral,
      },
    ]);
  });

  test("a malformed item (sender id not a string, bad timestamp, attachments not a list) is skipped, the rest of the batch kept", async () => {
    const good = messengerPayloads.message({ accountId: PAGE_ID, senderId: PSID, mid: "m_good", text: "ok", timestamp: 1458692752478 }) as {
      entry: { messaging: unknown[] }[];
    };
    const item = good.entry[0]!.messaging[0] as Record<string, any>;
    good.entry[0]!.messaging = [
      { ...item, sender: { id: 42 }, message: { mid: "m_bad1", text: "x" } },
      { ...item, timestamp: "soon", message: { mid: "m_bad2", text: "x" } },
      { ...item, message: { mid: "m_bad3", attachments: { type: "image" } } },
      item,
    ];
    const answer = await push(good);
    expect(answer).toEqual({ status: 200, body: "EVENT_RECEIVED" });
    expect(hooks.events().map((e) => (e as { providerMessageId: string }).providerMessageId)).toEqual(["m_good"]);
  });

  test("entries for another Page are skipped", async () => {
    await push(messengerPayloads.message({ accountId: "999", senderId: PSID, text: "not ours" }));
    expect(hooks.events()).toEqual([]);
  });

  test("signature: wrong, missing, altered body → 401 and zero events", () =>
    expectForgedSignaturesRefused({
      fake,
      hooks,
      payload: messengerPayloads.message({ accountId: PAGE_ID, senderId: PSID, text: "hi" }),
      appSecret: APP_SECRET,
    }));

  test("handshake: right token → challenge; wrong → 403", () => expectHandshake({ hooks, verifyToken: VERIFY, challenge: "CHALLENGE_ACCEPTED" }));
});

describe("interactive (DESIGN §16): quick replies", () => {
  test("buttons → text + quick_replies (content_type text, title, payload = id), exact bytes", async () => {
    const result = await adapter.send(
      msg({
        type: "interactive",
        interactive: {
          kind: "buttons",
          header: { text: "Booking" },
          body: { text: "Keep your table?" },
          buttons: [
            { id: "keep", title: "Keep it" },
            { id: "cancel", title: "Cancel" },
          ],
        },
      }),
    );
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^m_/) });
    expect(new TextDecoder().decode(fake.lastRequest!.raw)).toBe(
      `{"recipient":{"id":"${PSID}"},"messaging_type":"RESPONSE","message":{"text":"Booking\\n\\nKeep your table?","quick_replies":[{"content_type":"text","title":"Keep it","payload":"keep"},{"content_type":"text","title":"Cancel","payload":"cancel"}]}}`,
    );
  });

  test("a list becomes its rows as quick replies; a 24-character row title is cut to Meta's 20", async () => {
    await adapter.send(
      msg({
        type: "interactive",
        interactive: {
          kind: "list",
          body: { text: "Pick" },
          list: {
            button: "Slots",
            sections: [{ title: "A", rows: [{ id: "am", title: "Morning", description: "not shown" }] }, { rows: [{ id: "pm", title: "x".repeat(24) }] }],
          },
        },
      }),
    );
    expect((fake.lastRequest!.body as { message: unknown }).message).toEqual({
      text: "Pick",
      quick_replies: [
        { content_type: "text", title: "Morning", payload: "am" },
        { content_type: "text", title: `${"x".repeat(19)}…`, payload: "pm" },
      ],
    });
  });

  test("a quick-reply tap → interactive {replyId: payload, replyTitle: text}, reply_to.mid as inReplyTo", async () => {
    await fake.pushWebhook({
      url: hooks.url,
      appSecret: APP_SECRET,
      payload: messengerPayloads.quickReply({
        accountId: PAGE_ID,
        senderId: PSID,
        mid: "m_tap",
        title: "Keep it",
        payload: "keep",
        timestamp: 1458692752478,
        replyTo: "m_ours",
      }),
    });
    expect(hooks.events()).toEqual([
      {
        kind: "message",
        providerMessageId: "m_tap",
        from: { value: PSID },
        timestamp: new Date(1458692752478),
        content: { type: "interactive", interactive: { replyId: "keep", replyTitle: "Keep it" } },
        inReplyTo: "m_ours",
      },
    ]);
  });
});
