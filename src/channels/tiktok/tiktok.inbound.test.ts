import { describe, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { TiktokFake } from "../../../test/fakes/tiktok.fake";
import type { WebhookRequest } from "../channel.types";
import { createTiktokAdapter } from "./tiktok.adapter";

const NOW = new Date("2026-03-01T12:00:00Z");
const nowS = NOW.getTime() / 1000;
const SECRET = "client-secret-1";

function adapter() {
  const t = createTestContext({
    provider: "tiktok",
    channel: "tiktok",
    settings: { business_id: "biz-1", access_token: "t", client_secret: SECRET },
    now: NOW,
  });
  return createTiktokAdapter(t.ctx);
}
function request(body: unknown, signature: string | null, rawOverride?: string): WebhookRequest {
  const headers = new Headers({ "content-type": "application/json" });
  if (signature !== null) headers.set("Tiktok-Signature", signature);
  return { method: "POST", url: new URL("http://localhost/hooks/acc"), headers, rawBody: new TextEncoder().encode(rawOverride ?? JSON.stringify(body)) };
}
const signed = (body: unknown, timestamp = nowS) => request(body, TiktokFake.sign({ clientSecret: SECRET, timestamp, raw: JSON.stringify(body) }));

describe("tiktok webhooks", () => {
  const incoming = TiktokFake.messageWebhookBody({
    businessId: "biz-1",
    userId: "user-77",
    conversationId: "conv-9",
    text: "Do you ship to Vienna?",
    messageId: "msg-in-1",
    timestampMs: 1772366000123,
  });

  test("a signed but malformed event (null body, from_user.id not a string, bad timestamp) → 200 and no events", async () => {
    for (const body of [
      null,
      { ...incoming, content: JSON.stringify({ ...JSON.parse(incoming.content), from_user: { id: 77 } }) },
      { ...incoming, content: JSON.stringify({ ...JSON.parse(incoming.content), timestamp: "later" }) },
    ]) {
      const r = await adapter().handleWebhook(signed(body));
      expect(r.response.status).toBe(200);
      expect(r.events).toEqual([]);
    }
  });

  test("signed im_receive_msg → message with conversationRef and ms timestamp", async () => {
    const r = await adapter().handleWebhook(signed(incoming));
    expect(r.response.status).toBe(200);
    expect(r.events).toEqual([
      {
        kind: "message",
        providerMessageId: "msg-in-1",
        from: { value: "user-77" },
        timestamp: new Date(1772366000123),
        content: { type: "text", text: "Do you ship to Vienna?" },
        conversationRef: "conv-9",
      },
    ]);
  });

  test("image message → media with the media id", async () => {
    const body = TiktokFake.messageWebhookBody({ businessId: "biz-1", userId: "user-77", conversationId: "conv-9", imageMediaId: "img-5" });
    const r = await adapter().handleWebhook(signed(body));
    expect(r.events[0]).toMatchObject({ content: { type: "media", media: { kind: "image", providerMediaId: "img-5" } } });
  });

  test("timestamp 4 minutes old is accepted (drift tolerance)", async () => {
    const r = await adapter().handleWebhook(signed(incoming, nowS - 240));
    expect(r.response.status).toBe(200);
    expect(r.events).toHaveLength(1);
  });

  const forgeries: [string, () => WebhookRequest][] = [
    ["missing header", () => request(incoming, null)],
    ["wrong secret", () => request(incoming, TiktokFake.sign({ clientSecret: "other", timestamp: nowS, raw: JSON.stringify(incoming) }))],
    [
      "one altered byte",
      () =>
        request(
          incoming,
          TiktokFake.sign({ clientSecret: SECRET, timestamp: nowS, raw: JSON.stringify(incoming) }),
          JSON.stringify(incoming).replace("Vienna", "Vienne"),
        ),
    ],
    ["stale timestamp (6 min)", () => signed(incoming, nowS - 360)],
    ["future timestamp (6 min)", () => signed(incoming, nowS + 360)],
    [
      "timestamp swapped after signing",
      () => request(incoming, TiktokFake.sign({ clientSecret: SECRET, timestamp: nowS, raw: JSON.stringify(incoming) }).replace(`t=${nowS}`, `t=${nowS - 1}`)),
    ],
    ["malformed header", () => request(incoming, "sha256=abc")],
  ];
  for (const [name, make] of forgeries) {
    test(`forgery (${name}) → 401, no events`, async () => {
      const r = await adapter().handleWebhook(make());
      expect(r.response.status).toBe(401);
      expect(r.events).toEqual([]);
    });
  }

  test("our own outgoing message (to_user is not us) and im_send_msg are ignored", async () => {
    const out = TiktokFake.messageWebhookBody({ businessId: "biz-1", userId: "user-77", conversationId: "c", text: "ours", direction: "out" });
    expect((await adapter().handleWebhook(signed(out))).events).toEqual([]);
    const sendEvent = TiktokFake.messageWebhookBody({
      businessId: "biz-1",
      userId: "user-77",
      conversationId: "c",
      text: "ours",
      direction: "out",
      event: "im_send_msg",
    });
    const r = await adapter().handleWebhook(signed(sendEvent));
    expect(r.response.status).toBe(200);
    expect(r.events).toEqual([]);
  });

  test("im_mark_read_msg → read watermark for the user", async () => {
    const body = {
      event: "im_mark_read_msg",
      user_openid: "biz-1",
      create_time: nowS,
      content: JSON.stringify({ conversation_id: "conv-9", timestamp: 1772366100000, from_user: { id: "user-77" }, to_user: { id: "biz-1" } }),
    };
    const r = await adapter().handleWebhook(signed(body));
    expect(r.events).toEqual([{ kind: "watermark", from: { value: "user-77" }, status: "read", watermark: new Date(1772366100000) }]);
  });

  test("pushWebhook signs over real HTTP and the adapter accepts it", async () => {
    const a = adapter();
    let events: unknown[] = [];
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        const r = await a.handleWebhook({ method: req.method, url: new URL(req.url), headers: req.headers, rawBody: new Uint8Array(await req.arrayBuffer()) });
        events = r.events;
        return new Response(r.response.body ?? null, { status: r.response.status });
      },
    });
    try {
      const res = await TiktokFake.pushWebhook({ url: `http://127.0.0.1:${server.port}/hooks/x`, body: incoming, clientSecret: SECRET, timestamp: nowS });
      expect(res.status).toBe(200);
      expect(events).toHaveLength(1);
    } finally {
      server.stop(true);
    }
  });
});
