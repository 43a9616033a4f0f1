import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { GraphFake, instagramPayloads } from "../../../test/fakes/graph.fake";
import type { ChannelAdapter, OutboundMessage } from "../channel.types";
import { expectForgedSignaturesRefused, expectHandshake } from "../../../test/helpers/meta-webhooks";
import { serveAdapterHooks, type TestHookServer } from "../meta/test-hook-server";
import { createInstagramAdapter, instagramProvider } from "./instagram.adapter";

const IG_ID = "17841400000000000";
const IGSID = "1234567890123456";
const TOKEN = "IGAA-user-token";
const APP_SECRET = "ig-app-secret";
const VERIFY = "ig-verify";

let fake: GraphFake;
let adapter: ChannelAdapter;
let hooks: TestHookServer;

const msg = (content: OutboundMessage["content"]): OutboundMessage => ({ messageId: "msg-1", to: { value: IGSID }, content });

beforeAll(() => {
  fake = new GraphFake({ tokens: [TOKEN] });
  const { ctx } = createTestContext({
    provider: "instagram",
    channel: "instagram",
    settings: { ig_user_id: IG_ID, access_token: TOKEN, app_secret: APP_SECRET, verify_token: VERIFY, base_url: fake.url },
  });
  adapter = createInstagramAdapter(ctx);
  hooks = serveAdapterHooks(adapter);
});
afterEach(() => {
  fake.reset();
  hooks.results.length = 0;
});
afterAll(async () => {
  hooks.stop();
  await fake.stop();
});

describe("instagram provider definition", () => {
  test("channel, graph.instagram.com default, no delivery receipts", () => {
    expect(instagramProvider.channels).toEqual(["instagram"]);
    expect(instagramProvider.settings.properties.base_url.default).toBe("https://graph.instagram.com/v23.0");
    for (const [key, schema] of Object.entries(instagramProvider.settings.properties)) {
      expect(typeof (schema as { description?: string }).description, key).toBe("string");
      expect((schema as { default?: unknown }).default, key).toBeDefined();
    }
    expect(adapter.capabilities).toMatchObject({ webhookAuth: "provider-signature", deliveryReceipts: false, readReceipts: true });
    // Stored files cannot be sent (media by URL only): none are declared, so sends refuse them at acceptance.
    expect(adapter.capabilities.media).toEqual({});
  });
});

describe("outbound", () => {
  test("text: exact bytes to /{ig_user_id}/messages with the bearer token", async () => {
    const result = await adapter.send(msg({ type: "text", text: "Thanks for writing!" }));
    const req = fake.lastRequest!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe(`/v23.0/${IG_ID}/messages`);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(new TextDecoder().decode(req.raw)).toBe(`{"recipient":{"id":"${IGSID}"},"messaging_type":"RESPONSE","message":{"text":"Thanks for writing!"}}`);
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^m_/) });
  });

  test("media by URL: attachment with payload.url and is_reusable", async () => {
    await adapter.send(msg({ type: "media", media: { url: "https://cdn.example.com/clip.mp4" } }));
    expect(fake.lastRequest!.body).toEqual({
      recipient: { id: IGSID },
      messaging_type: "RESPONSE",
      message: { attachment: { type: "video", payload: { url: "https://cdn.example.com/clip.mp4", is_reusable: true } } },
    });
  });

  test("template: rendered text", async () => {
    await adapter.send(msg({ type: "template", template: { name: "t", language: "en", components: [], params: {}, rendered: { text: "Your code is 1234" } } }));
    expect(fake.lastRequest!.body).toEqual({ recipient: { id: IGSID }, messaging_type: "RESPONSE", message: { text: "Your code is 1234" } });
  });

  test("stored file without a URL: MEDIA_INVALID, nothing sent (Instagram Login takes media by URL only)", async () => {
    const result = await adapter.send(
      msg({ type: "media", media: { file: { id: "m", path: "/tmp/x.png", mimeType: "image/png", filename: "x.png", size: 1 } } }),
    );
    expect(result).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });

  test("outside the window (10/2534022) → MESSAGING_WINDOW_CLOSED; 551 → USER_BLOCKED; 5xx → retry", async () => {
    fake.failNext({ kind: "graph", code: 10, subcode: 2534022, message: "This message is sent outside of allowed window." });
    expect(await adapter.send(msg({ type: "text", text: "x" }))).toMatchObject({
      ok: false,
      retry: false,
      reason: "MESSAGING_WINDOW_CLOSED",
      providerCode: "10/2534022",
    });
    fake.failNext({ kind: "graph", code: 551 });
    expect(await adapter.send(msg({ type: "text", text: "x" }))).toMatchObject({ ok: false, retry: false, reason: "USER_BLOCKED" });
    fake.failNext({
      kind: "http",
      status: 500,
      body: { error: { message: "An unexpected error has occurred. Please retry your request later.", type: "OAuthException", code: 2, is_transient: true } },
    });
    expect(await adapter.send(msg({ type: "text", text: "x" }))).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "2" });
  });
});

describe("inbound webhooks", () => {
  const push = (payload: unknown) => fake.pushWebhook({ url: hooks.url, payload, appSecret: APP_SECRET });

  test("message with text, then an image attachment", async () => {
    await push(instagramPayloads.message({ accountId: IG_ID, senderId: IGSID, mid: "aWdfZAG1faXRlbTox", text: "Is this in stock?", timestamp: 1569262485349 }));
    await push(
      instagramPayloads.message({
        accountId: IG_ID,
        senderId: IGSID,
        mid: "aWdfZAG1faXRlbToy",
        attachments: [{ type: "image", payload: { url: "https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=1" } }],
        timestamp: 1569262485350,
      }),
    );
    expect(hooks.events()).toEqual([
      {
        kind: "message",
        providerMessageId: "aWdfZAG1faXRlbTox",
        from: { value: IGSID },
        timestamp: new Date(1569262485349),
        content: { type: "text", text: "Is this in stock?" },
      },
      {
        kind: "message",
        providerMessageId: "aWdfZAG1faXRlbToy",
        from: { value: IGSID },
        timestamp: new Date(1569262485350),
        content: { type: "media", media: { kind: "image", url: "https://lookaside.fbsbx.com/ig_messaging_cdn/?asset_id=1" } },
      },
    ]);
  });

  test("story mentions and shares are kept raw as unsupported", async () => {
    await push(
      instagramPayloads.message({
        accountId: IG_ID,
        senderId: IGSID,
        mid: "m_story",
        attachments: [{ type: "story_mention", payload: { url: "https://lookaside/story" } }],
      }),
    );
    expect(hooks.events()[0]).toMatchObject({ content: { type: "unsupported", raw: { type: "story_mention" } } });
  });

  test("echoes are ignored", async () => {
    await push(instagramPayloads.message({ accountId: IG_ID, senderId: IGSID, text: "sent from the app", isEcho: true }));
    expect(hooks.events()).toEqual([]);
  });

  test("messaging_seen → the seen mid read exactly, and a read watermark at the event timestamp; delivery items produce nothing", async () => {
    await push(instagramPayloads.seen({ accountId: IG_ID, senderId: IGSID, mid: "aWdfZAG1faXRlbTox", timestamp: 1569262486000 }));
    await push(instagramPayloads.delivery({ accountId: IG_ID, senderId: IGSID, watermark: 1569262486001 }));
    expect(hooks.events()).toEqual([
      { kind: "status", providerMessageId: "aWdfZAG1faXRlbTox", status: "read", timestamp: new Date(1569262486000) },
      { kind: "watermark", from: { value: IGSID }, status: "read", watermark: new Date(1569262486000) },
    ]);
  });

  test("a page (Messenger) payload is not Instagram's", async () => {
    const payload = { ...instagramPayloads.message({ accountId: IG_ID, senderId: IGSID, text: "x" }), object: "page" };
    expect((await push(payload)).status).toBe(200);
    expect(hooks.events()).toEqual([]);
  });

  test("signature: wrong, missing, one altered byte → 401, zero events", () =>
    expectForgedSignaturesRefused({
      fake,
      hooks,
      payload: instagramPayloads.message({ accountId: IG_ID, senderId: IGSID, text: "hi" }),
      appSecret: APP_SECRET,
    }));

  test("handshake: right token → challenge; wrong → 403", () => expectHandshake({ hooks, verifyToken: VERIFY, challenge: "42" }));
});

describe("interactive (DESIGN §16): quick replies", () => {
  test("a list of 10 rows → 10 quick replies on /{ig-id}/messages (exact bytes of the first)", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }));
    const result = await adapter.send(
      msg({ type: "interactive", interactive: { kind: "list", body: { text: "Pick" }, list: { button: "Rows", sections: [{ rows }] } } }),
    );
    expect(result.ok).toBe(true);
    const req = fake.lastRequest!;
    expect(req.path).toBe(`/v23.0/${IG_ID}/messages`);
    const raw = new TextDecoder().decode(req.raw);
    expect(raw).toStartWith(
      `{"recipient":{"id":"${IGSID}"},"messaging_type":"RESPONSE","message":{"text":"Pick","quick_replies":[{"content_type":"text","title":"Row 0","payload":"r0"},`,
    );
    expect(JSON.parse(raw).message.quick_replies).toHaveLength(10);
  });

  test("a quick-reply tap → interactive {replyId, replyTitle}", async () => {
    await fake.pushWebhook({
      url: hooks.url,
      appSecret: APP_SECRET,
      payload: instagramPayloads.quickReply({ accountId: IG_ID, senderId: IGSID, mid: "aWdfZAG1faXRlbToxOklH", title: "Row 3", payload: "r3" }),
    });
    expect(hooks.events()).toMatchObject([
      { kind: "message", providerMessageId: "aWdfZAG1faXRlbToxOklH", content: { type: "interactive", interactive: { replyId: "r3", replyTitle: "Row 3" } } },
    ]);
  });
});
