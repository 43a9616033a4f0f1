import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { TelegramFake, telegramErrors } from "../../../test/fakes/telegram.fake";
import type { OutboundMessage, StoredMedia } from "../channel.types";
import { createTelegramAdapter } from "./telegram.adapter";

const fake = TelegramFake.start({ token: "42:SECRET" });
afterAll(async () => {
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

function adapter(settings: Record<string, unknown> = {}) {
  const t = createTestContext({ provider: "telegram", channel: "telegram", settings: { bot_token: "42:SECRET", base_url: fake.url, ...settings } });
  return { ...t, adapter: createTelegramAdapter(t.ctx) };
}
const text = (value: string, body: string, extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  messageId: "m-1",
  to: { value },
  content: { type: "text", text: body },
  ...extra,
});

const dir = mkdtempSync(join(tmpdir(), "tg-media-"));
const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4, 0xff, 0xd9]);
writeFileSync(join(dir, "cat.jpg"), jpeg);
const storedJpeg = (providerMediaId?: string): StoredMedia => ({
  id: "media-1",
  path: join(dir, "cat.jpg"),
  mimeType: "image/jpeg",
  filename: "cat.jpg",
  size: jpeg.length,
  providerMediaId,
});

beforeEach(() => {
  fake.requests.length = 0;
});

describe("telegram send", () => {
  test("text → sendMessage with exact path, header and JSON", async () => {
    const { adapter: a } = adapter();
    const result = await a.send(text("1001", "Hello ✓"));
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^1001:\d+$/) });
    const [req] = fake.requests;
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/bot42:SECRET/sendMessage");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(new TextDecoder().decode(req.raw)).toBe('{"chat_id":1001,"text":"Hello ✓"}');
  });

  test("reply → reply_parameters with the bare message_id", async () => {
    const { adapter: a } = adapter();
    await a.send(text("1001", "re", { replyTo: { providerMessageId: "1001:77" } }));
    expect(fake.requests[0].body).toEqual({ chat_id: 1001, text: "re", reply_parameters: { message_id: 77, allow_sending_without_reply: true } });
  });

  test("template → rendered text", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({
      messageId: "m-2",
      to: { value: "1001" },
      content: {
        type: "template",
        template: { name: "hello_world", language: "en", components: [], params: { "body.1": "Ann" }, rendered: { text: "Hello Ann" } },
      },
    });
    expect(r.ok).toBe(true);
    expect(fake.requests[0].path).toEndWith("/sendMessage");
    expect(fake.requests[0].body).toEqual({ chat_id: 1001, text: "Hello Ann" });
  });

  test("media by URL → sendPhoto with the URL and caption", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({ messageId: "m", to: { value: "1001" }, content: { type: "media", media: { url: "https://cdn.example/p.jpg", caption: "look" } } });
    expect(r.ok).toBe(true);
    expect(fake.requests[0].path).toEndWith("/sendPhoto");
    expect(fake.requests[0].body).toEqual({ chat_id: 1001, caption: "look", photo: "https://cdn.example/p.jpg" });
  });

  test("media by URL of a PDF → sendDocument", async () => {
    const { adapter: a } = adapter();
    await a.send({ messageId: "m", to: { value: "1001" }, content: { type: "media", media: { url: "https://cdn.example/invoice.pdf" } } });
    expect(fake.requests[0].path).toEndWith("/sendDocument");
    expect(fake.requests[0].body).toEqual({ chat_id: 1001, document: "https://cdn.example/invoice.pdf" });
  });

  test("stored media without cached id → multipart upload, file_id returned for caching", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({ messageId: "m", to: { value: "1001" }, content: { type: "media", media: { file: storedJpeg(), caption: "cap" } } });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const req = fake.requests[0];
    expect(req.path).toEndWith("/sendPhoto");
    expect(req.headers["content-type"]).toStartWith("multipart/form-data; boundary=");
    const body = req.body as Record<string, any>;
    expect(body.chat_id).toBe("1001");
    expect(body.caption).toBe("cap");
    expect(body.photo.filename).toBe("cat.jpg");
    expect(body.photo.type).toBe("image/jpeg");
    expect([...body.photo.bytes]).toEqual([...jpeg]);
    expect(r.providerMediaId).toMatch(/^PHOTO-file-\d+$/); // the largest size's file_id
  });

  test("stored media with cached file_id → JSON with the file_id, no upload", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({ messageId: "m", to: { value: "1001" }, content: { type: "media", media: { file: storedJpeg("AgACached") } } });
    expect(r).toEqual({ ok: true, providerMessageId: expect.any(String) });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0].body).toEqual({ chat_id: 1001, photo: "AgACached" });
  });

  test("stale cached file_id → one upload retry", async () => {
    const { adapter: a } = adapter();
    fake.fail("sendPhoto", telegramErrors.wrongFileId());
    const r = await a.send({ messageId: "m", to: { value: "1001" }, content: { type: "media", media: { file: storedJpeg("AgAStale") } } });
    expect(r.ok).toBe(true);
    expect(fake.requests).toHaveLength(2);
    expect((fake.requests[1].body as any).photo.filename).toBe("cat.jpg");
    if (r.ok) expect(r.providerMediaId).toBeDefined();
  });

  test("mp4 upload → sendVideo, ogg → sendVoice", async () => {
    writeFileSync(join(dir, "v.mp4"), "mp4");
    writeFileSync(join(dir, "n.ogg"), "ogg");
    const { adapter: a } = adapter();
    const v = await a.send({
      messageId: "m",
      to: { value: "5" },
      content: { type: "media", media: { file: { id: "v", path: join(dir, "v.mp4"), mimeType: "video/mp4", filename: "v.mp4", size: 3 } } },
    });
    const n = await a.send({
      messageId: "m",
      to: { value: "5" },
      content: { type: "media", media: { file: { id: "n", path: join(dir, "n.ogg"), mimeType: "audio/ogg", filename: "n.ogg", size: 3 } } },
    });
    expect(fake.requests.map((r) => r.path.split("/").pop())).toEqual(["sendVideo", "sendVoice"]);
    expect(v.ok && v.providerMediaId).toStartWith("VIDEO-file-");
    expect(n.ok && n.providerMediaId).toStartWith("VOICE-file-");
  });
});

describe("telegram error mapping", () => {
  const cases = [
    {
      name: "403 blocked",
      failure: telegramErrors.blocked(),
      expected: { retry: false, reason: "USER_BLOCKED", providerCode: "403", message: "Forbidden: bot was blocked by the user" },
    },
    { name: "403 deactivated", failure: telegramErrors.deactivated(), expected: { retry: false, reason: "RECIPIENT_INVALID", providerCode: "403" } },
    { name: "400 chat not found", failure: telegramErrors.chatNotFound(), expected: { retry: false, reason: "RECIPIENT_INVALID", providerCode: "400" } },
    { name: "429", failure: telegramErrors.tooManyRequests(8), expected: { retry: true, reason: "RATE_LIMITED", retryAfterMs: 8000, providerCode: "429" } },
    { name: "401", failure: telegramErrors.unauthorized(), expected: { retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" } },
    { name: "502", failure: telegramErrors.serverError(), expected: { retry: true, reason: "PROVIDER_UNAVAILABLE" } },
    {
      name: "HTML 503 from a proxy",
      failure: { kind: "response" as const, status: 503, body: "<html>down</html>" },
      expected: { retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "503" },
    },
    { name: "dropped connection", failure: { kind: "drop" as const }, expected: { retry: true, reason: "PROVIDER_UNAVAILABLE" } },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const { adapter: a } = adapter();
      fake.fail("sendMessage", c.failure);
      const r = await a.send(text("1001", "x"));
      expect(r).toMatchObject({ ok: false, ...c.expected });
    });
  }

  test("unreachable host → retryable PROVIDER_UNAVAILABLE", async () => {
    const { adapter: a } = adapter({ base_url: "http://127.0.0.1:1" });
    expect(await a.send(text("1", "x"))).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE" });
  });

  test("wrong token → the fake's own 401", async () => {
    const { adapter: a } = adapter({ bot_token: "42:WRONG" });
    expect(await a.send(text("1", "x"))).toMatchObject({ ok: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" });
  });
});

describe("telegram webhook mode", () => {
  const secret = "s3cr3t_Token-1";
  const update = {
    update_id: 9001,
    message: { message_id: 5, from: { id: 1001, first_name: "Ann", username: "ann" }, chat: { id: 1001, type: "private" }, date: 1700000000, text: "hi" },
  };
  const request = (headers: Record<string, string>, body = JSON.stringify(update)) => ({
    method: "POST",
    url: new URL("http://localhost/hooks/acc"),
    headers: new Headers(headers),
    rawBody: new TextEncoder().encode(body),
  });

  test("webhook mode without secret_token refuses to start", () => {
    expect(() => adapter({ mode: "webhook" })).toThrow(/secret_token/);
  });

  test("start() registers the webhook with url, secret and allowed_updates", async () => {
    const { adapter: a, ctx } = adapter({ mode: "webhook", secret_token: secret });
    await a.start!();
    expect(fake.calls("setWebhook")[0].body).toEqual({
      url: `http://localhost:8080/hooks/${ctx.account.id}`,
      secret_token: secret,
      allowed_updates: ["message", "callback_query", "my_chat_member"],
    });
    expect(fake.webhook?.url).toBe(`http://localhost:8080/hooks/${ctx.account.id}`);
    await a.stop!();
    fake.webhook = undefined;
  });

  test("valid secret → 200 and the parsed message", async () => {
    const { adapter: a } = adapter({ mode: "webhook", secret_token: secret });
    const r = await a.handleWebhook(request({ "x-telegram-bot-api-secret-token": secret }));
    expect(r.response.status).toBe(200);
    expect(r.events).toEqual([
      {
        kind: "message",
        providerMessageId: "1001:5",
        from: { value: "1001", username: "ann", displayName: "Ann" },
        timestamp: new Date(1700000000 * 1000),
        content: { type: "text", text: "hi" },
      },
    ]);
  });

  test("a malformed update (from.id not a number, chat missing) → 200 and no events, so Telegram does not redeliver it forever", async () => {
    const { adapter: a } = adapter({ mode: "webhook", secret_token: secret });
    for (const message of [
      { ...update.message, from: { id: "1001" } },
      { ...update.message, chat: undefined },
    ]) {
      const r = await a.handleWebhook(request({ "x-telegram-bot-api-secret-token": secret }, JSON.stringify({ ...update, message })));
      expect(r.response.status).toBe(200);
      expect(r.events).toEqual([]);
    }
  });

  const forgeries: [string, Record<string, string>][] = [
    ["missing header", {}],
    ["wrong secret", { "x-telegram-bot-api-secret-token": "nope" }],
    ["one altered byte", { "x-telegram-bot-api-secret-token": secret.slice(0, -1) + "2" }],
    ["prefix only", { "x-telegram-bot-api-secret-token": secret.slice(0, 5) }],
  ];
  for (const [name, headers] of forgeries) {
    test(`forgery (${name}) → 401, no events`, async () => {
      const { adapter: a } = adapter({ mode: "webhook", secret_token: secret });
      const r = await a.handleWebhook(request(headers));
      expect(r.response.status).toBe(401);
      expect(r.events).toEqual([]);
    });
  }

  test("polling mode answers webhooks with 404", async () => {
    const { adapter: a } = adapter({ mode: "polling", secret_token: secret });
    const r = await a.handleWebhook(request({ "x-telegram-bot-api-secret-token": secret }));
    expect(r.response.status).toBe(404);
    expect(r.events).toEqual([]);
  });

  test("fake delivers to a registered webhook with the secret header", async () => {
    let seen = null as string | null;
    const receiver = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) => ((seen = req.headers.get("x-telegram-bot-api-secret-token")), new Response("ok")),
    });
    try {
      fake.webhook = { url: `http://127.0.0.1:${receiver.port}/hooks/x`, secret_token: secret };
      const res = await fake.deliverWebhook({ message: update.message });
      expect(res.status).toBe(200);
      expect(seen).toBe(secret);
    } finally {
      fake.webhook = undefined;
      receiver.stop(true);
    }
  });
});

describe("telegram interactive (DESIGN §16)", () => {
  const secret = "s3cr3t_Token-1";
  const buttons: OutboundMessage["content"] = {
    type: "interactive",
    interactive: {
      kind: "buttons",
      header: { text: "Booking" },
      body: { text: "Keep your table?" },
      footer: { text: "Reply by Thursday" },
      buttons: [
        { id: "keep", title: "Keep it" },
        { id: "cancel", title: "Cancel" },
      ],
    },
  };
  const list: OutboundMessage["content"] = {
    type: "interactive",
    interactive: {
      kind: "list",
      body: { text: "Pick a slot" },
      list: {
        button: "Slots",
        sections: [{ title: "Tomorrow", rows: [{ id: "am", title: "Morning", description: "08-12" }] }, { rows: [{ id: "pm", title: "Afternoon" }] }],
      },
    },
  };

  test("buttons → sendMessage with an inline keyboard on one row, callback_data = id (exact bytes)", async () => {
    const { adapter: a } = adapter();
    const result = await a.send({ messageId: "m-1", to: { value: "1001" }, content: buttons });
    expect(result.ok).toBe(true);
    expect(new TextDecoder().decode(fake.calls("sendMessage")[0].raw)).toBe(
      '{"chat_id":1001,"text":"Booking\\n\\nKeep your table?\\n\\nReply by Thursday","reply_markup":{"inline_keyboard":[[{"text":"Keep it","callback_data":"keep"},{"text":"Cancel","callback_data":"cancel"}]]}}',
    );
  });

  test("list → one row per list row, across sections (exact bytes)", async () => {
    const { adapter: a } = adapter();
    await a.send({ messageId: "m-1", to: { value: "1001" }, content: list });
    expect(new TextDecoder().decode(fake.calls("sendMessage")[0].raw)).toBe(
      '{"chat_id":1001,"text":"Pick a slot","reply_markup":{"inline_keyboard":[[{"text":"Morning","callback_data":"am"}],[{"text":"Afternoon","callback_data":"pm"}]]}}',
    );
  });

  const sentThenTapped = async (mode: "webhook" | "polling") => {
    const t = adapter({ mode, secret_token: secret });
    const sent = await t.adapter.send({ messageId: "m-1", to: { value: "1001" }, content: buttons });
    if (!sent.ok) throw new Error("send failed");
    const messageId = Number(sent.providerMessageId.split(":")[1]);
    const message = {
      message_id: messageId,
      from: { id: 42, is_bot: true, first_name: "Test Bot", username: "test_bot" },
      chat: { id: 1001, type: "private" },
      date: 1700000000,
      text: "Keep your table?",
      reply_markup: (fake.calls("sendMessage")[0].body as { reply_markup: unknown }).reply_markup,
    };
    const update = fake.callbackQuery({ from: { id: 1001, first_name: "Ann", username: "ann" }, message, data: "cancel" });
    return { ...t, update, providerMessageId: sent.providerMessageId };
  };

  test("webhook: a callback_query becomes an interactive message (title from the keyboard, inReplyTo our message) and is answered", async () => {
    const { adapter: a, update, providerMessageId, ctx } = await sentThenTapped("webhook");
    const queryId = (update.callback_query as { id: string }).id;
    const r = await a.handleWebhook({
      method: "POST",
      url: new URL("http://localhost/hooks/acc"),
      headers: new Headers({ "x-telegram-bot-api-secret-token": secret }),
      rawBody: new TextEncoder().encode(JSON.stringify({ update_id: 9100, ...update })),
    });
    expect(r.response.status).toBe(200);
    expect(r.events).toEqual([
      {
        kind: "message",
        providerMessageId: `callback:${queryId}`,
        from: { value: "1001", username: "ann", displayName: "Ann" },
        timestamp: ctx.now(),
        content: { type: "interactive", interactive: { replyId: "cancel", replyTitle: "Cancel" } },
        inReplyTo: providerMessageId,
      },
    ]);
    expect(new TextDecoder().decode(fake.calls("answerCallbackQuery")[0].raw)).toBe(`{"callback_query_id":"${queryId}"}`);
    expect(fake.callbackQueries.has(queryId)).toBe(false);
  });

  test("polling: the tap is handed over, then answered", async () => {
    const { adapter: a, update, inbound } = await sentThenTapped("polling");
    const queryId = (update.callback_query as { id: string }).id;
    fake.queueUpdate(update);
    await a.startPolling!();
    try {
      for (let i = 0; i < 200 && fake.calls("answerCallbackQuery").length === 0; i++) await Bun.sleep(10);
      expect(inbound.flat()).toMatchObject([{ kind: "message", content: { type: "interactive", interactive: { replyId: "cancel", replyTitle: "Cancel" } } }]);
      expect(fake.calls("answerCallbackQuery")[0].body).toEqual({ callback_query_id: queryId });
    } finally {
      await a.stopPolling!();
      fake.clearUpdates();
    }
  });

  test("a failed answerCallbackQuery is logged; the tap is kept", async () => {
    const { adapter: a, update } = await sentThenTapped("webhook");
    fake.fail("answerCallbackQuery", { kind: "response", status: 400, body: { ok: false, error_code: 400, description: "Bad Request: query is too old" } });
    const r = await a.handleWebhook({
      method: "POST",
      url: new URL("http://localhost/hooks/acc"),
      headers: new Headers({ "x-telegram-bot-api-secret-token": secret }),
      rawBody: new TextEncoder().encode(JSON.stringify({ update_id: 9101, ...update })),
    });
    expect(r.response.status).toBe(200);
    expect(r.events).toHaveLength(1);
  });
});
