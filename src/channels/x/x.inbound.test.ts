import { afterAll, describe, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { XFake } from "../../../test/fakes/x.fake";
import type { ChannelAdapter, WebhookRequest } from "../channel.types";
import { createXAdapter } from "./x.adapter";

const OUR_ID = "1000000001";
const SECRET = "consumer-secret-xyz";

function adapter(settings: Record<string, unknown> = {}): ChannelAdapter {
  const t = createTestContext({ provider: "x", channel: "x", settings: { user_id: OUR_ID, access_token: "t", consumer_secret: SECRET, ...settings } });
  return createXAdapter(t.ctx);
}

/** The adapter behind a loopback server, so the fake's webhook helpers hit it over real HTTP. */
const a = adapter();
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const request: WebhookRequest = { method: req.method, url: new URL(req.url), headers: req.headers, rawBody: new Uint8Array(await req.arrayBuffer()) };
    const { response, events } = await a.handleWebhook(request);
    received.push(...events);
    return new Response(response.body ?? null, { status: response.status, headers: response.headers });
  },
});
const received: unknown[] = [];
const hookUrl = `http://127.0.0.1:${server.port}/hooks/acc`;
afterAll(() => server.stop(true));

describe("x webhooks", () => {
  test("CRC answer is sha256=<base64 HMAC-SHA256(consumer_secret, crc_token)>", async () => {
    const r = await XFake.crc({ url: hookUrl, consumerSecret: SECRET, crcToken: "challenge-123" });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ response_token: r.expected });
    expect(r.expected).toBe("sha256=" + new Bun.CryptoHasher("sha256", SECRET).update("challenge-123").digest("base64"));
  });

  test("CRC token not of X's shape (a JSON body, markup, over 128 characters) → 400, nothing signed", async () => {
    const dm = JSON.stringify(XFake.dmPayload({ forUserId: OUR_ID, senderId: "666", text: "START" }));
    for (const token of [dm, "<b>x</b>", "a".repeat(129), "a b"]) {
      const url = new URL(hookUrl);
      url.searchParams.set("crc_token", token);
      const res = await fetch(url);
      expect(res.status).toBe(400);
      expect(await res.text()).not.toContain("sha256=");
    }
    expect((await XFake.crc({ url: hookUrl, consumerSecret: SECRET, crcToken: "A".repeat(128) })).status).toBe(200);
  });

  test("signed DM delivery → message event with username and display name", async () => {
    received.length = 0;
    const payload = XFake.dmPayload({
      forUserId: OUR_ID,
      senderId: "2244994945",
      text: "Is my order shipped?",
      eventId: "1700000000000000042",
      createdMs: 1767225600000,
    });
    const res = await XFake.pushWebhook({ url: hookUrl, payload, consumerSecret: SECRET });
    expect(res.status).toBe(200);
    expect(received).toEqual([
      {
        kind: "message",
        providerMessageId: "1700000000000000042",
        from: { value: "2244994945", username: "annlee", displayName: "Ann Lee" },
        timestamp: new Date(1767225600000),
        content: { type: "text", text: "Is my order shipped?" },
      },
    ]);
  });

  test("a tap on a quick-reply option → interactive {replyId: metadata, replyTitle: text}", async () => {
    received.length = 0;
    const payload = XFake.dmPayload({ forUserId: OUR_ID, senderId: "2244994945", text: "Keep it", quickReplyMetadata: "keep", eventId: "1700000000000000043" });
    expect((await XFake.pushWebhook({ url: hookUrl, payload, consumerSecret: SECRET })).status).toBe(200);
    expect(received).toMatchObject([
      { kind: "message", providerMessageId: "1700000000000000043", content: { type: "interactive", interactive: { replyId: "keep", replyTitle: "Keep it" } } },
    ]);
  });

  const forgeries: [string, string | null][] = [
    ["missing header", null],
    ["wrong secret", "sha256=" + new Bun.CryptoHasher("sha256", "other").update("{}").digest("base64")],
    ["garbage", "sha256=AAAA"],
  ];
  for (const [name, signature] of forgeries) {
    test(`forgery (${name}) → 401, no events`, async () => {
      received.length = 0;
      const payload = XFake.dmPayload({ forUserId: OUR_ID, senderId: "2244994945", text: "x" });
      const res = await XFake.pushWebhook({ url: hookUrl, payload, consumerSecret: SECRET, signature });
      expect(res.status).toBe(401);
      expect(received).toEqual([]);
    });
  }

  test("one altered byte of a correctly signed body → 401, no events", async () => {
    const raw = JSON.stringify(XFake.dmPayload({ forUserId: OUR_ID, senderId: "2244994945", text: "pay 10" }));
    const signature = "sha256=" + new Bun.CryptoHasher("sha256", SECRET).update(raw).digest("base64");
    const altered = raw.replace("pay 10", "pay 90");
    const r = await a.handleWebhook({
      method: "POST",
      url: new URL(hookUrl),
      headers: new Headers({ "x-twitter-webhooks-signature": signature }),
      rawBody: new TextEncoder().encode(altered),
    });
    expect(r.response.status).toBe(401);
    expect(r.events).toEqual([]);
    // and the unaltered body passes
    const ok = await a.handleWebhook({
      method: "POST",
      url: new URL(hookUrl),
      headers: new Headers({ "x-twitter-webhooks-signature": signature }),
      rawBody: new TextEncoder().encode(raw),
    });
    expect(ok.response.status).toBe(200);
    expect(ok.events).toHaveLength(1);
  });

  test("our own echoed DMs are ignored; read events become read watermarks", async () => {
    const payload = {
      for_user_id: OUR_ID,
      direct_message_events: [
        {
          type: "message_create",
          id: "1",
          created_timestamp: "1767225600000",
          message_create: { target: { recipient_id: "2244994945" }, sender_id: OUR_ID, message_data: { text: "our reply" } },
        },
      ],
      direct_message_mark_read_events: [
        { created_timestamp: "1767225700000", sender_id: "2244994945", target: { recipient_id: OUR_ID }, last_read_event_id: "1" },
      ],
      users: { "2244994945": { id: "2244994945", name: "Ann Lee", screen_name: "annlee" } },
    };
    const raw = new TextEncoder().encode(JSON.stringify(payload));
    const sig = "sha256=" + new Bun.CryptoHasher("sha256", SECRET).update(raw).digest("base64");
    const r = await a.handleWebhook({ method: "POST", url: new URL(hookUrl), headers: new Headers({ "x-twitter-webhooks-signature": sig }), rawBody: raw });
    expect(r.events).toEqual([
      { kind: "watermark", from: { value: "2244994945", username: "annlee", displayName: "Ann Lee" }, status: "read", watermark: new Date(1767225700000) },
    ]);
  });

  test("a DM with a photo → media event without the t.co link in the caption", async () => {
    const payload = {
      for_user_id: OUR_ID,
      direct_message_events: [
        {
          type: "message_create",
          id: "9",
          created_timestamp: "1767225600000",
          message_create: {
            target: { recipient_id: OUR_ID },
            sender_id: "2244994945",
            message_data: {
              text: "broken box https://t.co/abc",
              attachment: {
                type: "media",
                media: { id_str: "555", media_url_https: "https://ton.twitter.com/1.1/ton/data/dm/1/2/x.jpg", type: "photo", url: "https://t.co/abc" },
              },
            },
          },
        },
      ],
    };
    const raw = new TextEncoder().encode(JSON.stringify(payload));
    const sig = "sha256=" + new Bun.CryptoHasher("sha256", SECRET).update(raw).digest("base64");
    const r = await a.handleWebhook({ method: "POST", url: new URL(hookUrl), headers: new Headers({ "x-twitter-webhooks-signature": sig }), rawBody: raw });
    expect(r.events[0]).toMatchObject({
      kind: "message",
      from: { value: "2244994945" },
      content: { type: "media", media: { kind: "image", providerMediaId: "555", caption: "broken box" } },
    });
  });

  test("a delivery with a malformed DM event (sender id not an X id, no id, bad time) keeps the good ones", async () => {
    const good = XFake.dmPayload({ forUserId: OUR_ID, senderId: "2244994945", text: "good", eventId: "1700000000000000077" }) as {
      direct_message_events: Record<string, any>[];
    };
    const dm = good.direct_message_events[0]!;
    good.direct_message_events = [
      { ...dm, id: "1", message_create: { ...dm.message_create, sender_id: { evil: true } } },
      { ...dm, id: undefined },
      { ...dm, id: "2", created_timestamp: "yesterday" },
      dm,
    ];
    const raw = new TextEncoder().encode(JSON.stringify(good));
    const sig = "sha256=" + new Bun.CryptoHasher("sha256", SECRET).update(raw).digest("base64");
    const r = await a.handleWebhook({ method: "POST", url: new URL(hookUrl), headers: new Headers({ "x-twitter-webhooks-signature": sig }), rawBody: raw });
    expect(r.response.status).toBe(200);
    expect(r.events.map((e) => (e as { providerMessageId: string }).providerMessageId)).toEqual(["1700000000000000077"]);
  });

  test("deliveries for another subscribed user are ignored", async () => {
    const raw = new TextEncoder().encode(JSON.stringify(XFake.dmPayload({ forUserId: "999", senderId: "2244994945", text: "x" })));
    const sig = "sha256=" + new Bun.CryptoHasher("sha256", SECRET).update(raw).digest("base64");
    const r = await a.handleWebhook({ method: "POST", url: new URL(hookUrl), headers: new Headers({ "x-twitter-webhooks-signature": sig }), rawBody: raw });
    expect(r.response.status).toBe(200);
    expect(r.events).toEqual([]);
  });

  test("an OAuth2-only account (no consumer_secret) cannot receive: 403 for CRC and deliveries", async () => {
    const b = adapter({ consumer_secret: "" });
    const crc = await b.handleWebhook({ method: "GET", url: new URL(`${hookUrl}?crc_token=x`), headers: new Headers(), rawBody: new Uint8Array() });
    expect(crc.response.status).toBe(403);
    const post = await b.handleWebhook({
      method: "POST",
      url: new URL(hookUrl),
      headers: new Headers({ "x-twitter-webhooks-signature": "sha256=x" }),
      rawBody: new TextEncoder().encode("{}"),
    });
    expect(post.response.status).toBe(403);
    expect(post.events).toEqual([]);
  });
});
