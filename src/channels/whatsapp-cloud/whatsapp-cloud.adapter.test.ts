import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { GraphFake, type RecordedFile, whatsappPayloads, metaTemplate } from "../../../test/fakes/graph.fake";
import type { ChannelAdapter, OutboundMessage, StoredMedia } from "../channel.types";
import { GraphRequestError } from "../meta/meta.errors";
import { expectForgedSignaturesRefused, expectHandshake } from "../../../test/helpers/meta-webhooks";
import { serveAdapterHooks, type TestHookServer } from "../meta/test-hook-server";
import { createWhatsappCloudAdapter, whatsappCloudProvider } from "./whatsapp-cloud.adapter";

const PHONE_ID = "106540352242922";
const WABA_ID = "102290129340398";
const TOKEN = "EAAG-test-token";
const APP_SECRET = "wa-app-secret";
const VERIFY = "wa-verify-token";

let fake: GraphFake;
let adapter: ChannelAdapter;
let hooks: TestHookServer;
const dir = mkdtempSync(join(tmpdir(), "wa-adapter-"));

function storedFile({ name, mimeType, bytes, providerMediaId }: { name: string; mimeType: string; bytes: Uint8Array; providerMediaId?: string }): StoredMedia {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return { id: `media-${name}`, path, mimeType, filename: name, size: bytes.length, ...(providerMediaId ? { providerMediaId } : {}) };
}

const msg = (content: OutboundMessage["content"], extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  messageId: "msg-1",
  to: { value: "+4915112345678" },
  content,
  ...extra,
});

beforeAll(() => {
  fake = new GraphFake({ tokens: [TOKEN], templatePageSize: 2 });
  const { ctx } = createTestContext({
    provider: "whatsapp-cloud",
    channel: "whatsapp",
    now: new Date("2025-01-15T12:00:00.000Z"),
    settings: { phone_number_id: PHONE_ID, waba_id: WABA_ID, access_token: TOKEN, app_secret: APP_SECRET, verify_token: VERIFY, base_url: fake.url },
  });
  adapter = createWhatsappCloudAdapter(ctx);
  hooks = serveAdapterHooks(adapter);
  fake.setWebhookTarget({ url: hooks.url, appSecret: APP_SECRET });
});
afterEach(() => {
  fake.reset();
  hooks.results.length = 0;
});
afterAll(async () => {
  hooks.stop();
  await fake.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("whatsapp-cloud provider definition", () => {
  test("serves the whatsapp channel and defaults base_url to Graph v23.0", () => {
    expect(whatsappCloudProvider.name).toBe("whatsapp-cloud");
    expect(whatsappCloudProvider.channels).toEqual(["whatsapp"]);
    expect(whatsappCloudProvider.settings.properties.base_url.default).toBe("https://graph.facebook.com/v23.0");
    for (const [key, schema] of Object.entries(whatsappCloudProvider.settings.properties)) {
      expect(typeof (schema as { description?: string }).description, key).toBe("string");
      expect((schema as { default?: unknown }).default, key).toBeDefined();
    }
  });
  test("a missing credential fails at creation, naming the key", () => {
    const { ctx } = createTestContext({
      provider: "whatsapp-cloud",
      channel: "whatsapp",
      settings: { phone_number_id: PHONE_ID, app_secret: "s", verify_token: "v" },
    });
    expect(() => createWhatsappCloudAdapter(ctx)).toThrow(/access_token/);
  });
});

describe("outbound", () => {
  test("text: exact JSON, path and bearer token", async () => {
    const result = await adapter.send(msg({ type: "text", text: "Hello https://example.com" }));
    expect(result.ok).toBe(true);
    const req = fake.lastRequest!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe(`/v23.0/${PHONE_ID}/messages`);
    expect(req.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(req.headers["content-type"]).toBe("application/json");
    expect(new TextDecoder().decode(req.raw)).toBe(
      `{"messaging_product":"whatsapp","recipient_type":"individual","to":"4915112345678","type":"text","text":{"body":"Hello https://example.com","preview_url":false}}`,
    );
    expect(result.ok && result.providerMessageId).toMatch(/^wamid\./);
  });

  test("reply: context.message_id", async () => {
    await adapter.send(msg({ type: "text", text: "re" }, { replyTo: { providerMessageId: "wamid.ORIGINAL" } }));
    expect(fake.lastRequest!.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "4915112345678",
      type: "text",
      text: { body: "re", preview_url: false },
      context: { message_id: "wamid.ORIGINAL" },
    });
  });

  test("media by URL: type from the extension, link + caption; documents get a filename", async () => {
    await adapter.send(msg({ type: "media", media: { url: "https://cdn.example.com/p/photo.jpg", caption: "Your order" } }));
    expect(fake.lastRequest!.body).toMatchObject({ type: "image", image: { link: "https://cdn.example.com/p/photo.jpg", caption: "Your order" } });
    await adapter.send(msg({ type: "media", media: { url: "https://cdn.example.com/invoice%20A1.pdf", caption: "Invoice" } }));
    expect(fake.lastRequest!.body).toMatchObject({
      type: "document",
      document: { link: "https://cdn.example.com/invoice%20A1.pdf", caption: "Invoice", filename: "invoice A1.pdf" },
    });
    await adapter.send(msg({ type: "media", media: { url: "https://cdn.example.com/a.mp3", caption: "ignored" } }));
    expect(fake.lastRequest!.body).toMatchObject({ type: "audio", audio: { link: "https://cdn.example.com/a.mp3" } });
    expect((fake.lastRequest!.body as { audio: object }).audio).not.toHaveProperty("caption");
  });

  test("stored file: multipart upload to /media, then send by id; the id is returned for caching", async () => {
    const bytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3, 4]);
    const file = storedFile({ name: "photo.jpg", mimeType: "image/jpeg", bytes });
    const result = await adapter.send(msg({ type: "media", media: { file, caption: "Look" } }));
    expect(fake.requests).toHaveLength(2);
    const [upload, send] = fake.requests;
    expect(upload.path).toBe(`/v23.0/${PHONE_ID}/media`);
    expect(upload.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(upload.headers["content-type"]).toStartWith("multipart/form-data; boundary=");
    const form = upload.body as { messaging_product: string; type: string; file: RecordedFile };
    expect(form.messaging_product).toBe("whatsapp");
    expect(form.type).toBe("image/jpeg");
    expect(form.file.filename).toBe("photo.jpg");
    expect(form.file.type).toBe("image/jpeg");
    expect([...form.file.bytes]).toEqual([...bytes]);
    const mediaId = (send.body as { image: { id: string } }).image.id;
    expect(send.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "4915112345678",
      type: "image",
      image: { id: mediaId, caption: "Look" },
    });
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^wamid\./), providerMediaId: mediaId });
  });

  test("stored file with a cached providerMediaId: no upload", async () => {
    const file = storedFile({ name: "doc.pdf", mimeType: "application/pdf", bytes: new Uint8Array([37, 80, 68, 70]), providerMediaId: "998877" });
    const result = await adapter.send(msg({ type: "media", media: { file, caption: "Contract" } }));
    expect(fake.requests).toHaveLength(1);
    expect(fake.lastRequest!.body).toMatchObject({ type: "document", document: { id: "998877", caption: "Contract", filename: "doc.pdf" } });
    expect(result).toEqual({ ok: true, providerMessageId: expect.any(String) });
  });

  test("cached id refused (expired) → one fresh upload and resend, new id returned", async () => {
    const file = storedFile({ name: "v.mp4", mimeType: "video/mp4", bytes: new Uint8Array([0, 0, 0, 24]), providerMediaId: "expired-id" });
    fake.failNext({ kind: "graph", code: 131053, details: "Media upload error" }, { path: "/messages" });
    const result = await adapter.send(msg({ type: "media", media: { file } }));
    expect(fake.requests.map((r) => r.path)).toEqual([`/v23.0/${PHONE_ID}/messages`, `/v23.0/${PHONE_ID}/media`, `/v23.0/${PHONE_ID}/messages`]);
    expect(result.ok && result.providerMediaId).toBeTruthy();
    expect(result.ok && result.providerMediaId).not.toBe("expired-id");
  });

  test("webp is sent as a sticker (no caption)", async () => {
    const file = storedFile({ name: "s.webp", mimeType: "image/webp", bytes: new Uint8Array([82, 73, 70, 70]) });
    await adapter.send(msg({ type: "media", media: { file, caption: "no" } }));
    const body = fake.lastRequest!.body as { type: string; sticker: Record<string, unknown> };
    expect(body.type).toBe("sticker");
    expect(Object.keys(body.sticker)).toEqual(["id"]);
  });

  test("a file over Meta's limit or of a refused type fails MEDIA_INVALID without a request", async () => {
    const big = { ...storedFile({ name: "big.png", mimeType: "image/png", bytes: new Uint8Array([1]) }), size: 5 * 1024 * 1024 + 1 };
    expect(await adapter.send(msg({ type: "media", media: { file: big } }))).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    const exe = storedFile({ name: "x.exe", mimeType: "application/x-msdownload", bytes: new Uint8Array([77, 90]) });
    expect(await adapter.send(msg({ type: "media", media: { file: exe } }))).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });

  test("template: components from params, deterministic language, header media by link", async () => {
    const result = await adapter.send(
      msg({
        type: "template",
        template: {
          name: "order_update",
          language: "en_US",
          components: [
            { type: "header", format: "image" },
            { type: "body", text: "Hi {{1}}, order {{2}} ... {{10}}" },
            {
              type: "buttons",
              buttons: [
                { type: "url", text: "Track", url: "https://shop.example/t/{{1}}" },
                { type: "quick_reply", text: "Stop" },
              ],
            },
          ],
          params: { "body.10": "ten", "body.2": "A123", "body.1": "Ann", "button.0.1": "A123", "button.1.1": "STOP_PAYLOAD" },
          headerMedia: { url: "https://cdn.example.com/banner.png" },
          rendered: { text: "Hi Ann, order A123 ... ten" },
        },
      }),
    );
    expect(result.ok).toBe(true);
    expect(fake.lastRequest!.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "4915112345678",
      type: "template",
      template: {
        name: "order_update",
        language: { code: "en_US", policy: "deterministic" },
        components: [
          { type: "header", parameters: [{ type: "image", image: { link: "https://cdn.example.com/banner.png" } }] },
          {
            type: "body",
            parameters: [
              { type: "text", text: "Ann" },
              { type: "text", text: "A123" },
              { type: "text", text: "ten" },
            ],
          },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "A123" }] },
          { type: "button", sub_type: "quick_reply", index: "1", parameters: [{ type: "payload", payload: "STOP_PAYLOAD" }] },
        ],
      },
    });
  });

  test("template with a stored header document: uploaded first, id returned for caching", async () => {
    const file = storedFile({ name: "ticket.pdf", mimeType: "application/pdf", bytes: new Uint8Array([37, 80, 68, 70, 45]) });
    const result = await adapter.send(
      msg({
        type: "template",
        template: {
          name: "ticket",
          language: "de",
          components: [
            { type: "header", format: "document" },
            { type: "body", text: "Hallo" },
          ],
          params: {},
          headerMedia: { file },
          rendered: { text: "Hallo" },
        },
      }),
    );
    expect(fake.requests.map((r) => r.path.split("/").pop())).toEqual(["media", "messages"]);
    const id = (fake.lastRequest!.body as any).template.components[0].parameters[0].document.id as string;
    expect(fake.lastRequest!.body).toMatchObject({
      template: {
        name: "ticket",
        language: { code: "de", policy: "deterministic" },
        components: [{ type: "header", parameters: [{ type: "document", document: { id } }] }],
      },
    });
    expect(result).toMatchObject({ ok: true, providerMediaId: id });
  });

  test("template without params sends no components", async () => {
    await adapter.send(
      msg({
        type: "template",
        template: {
          name: "hello_world",
          language: "en_US",
          components: [{ type: "body", text: "Hello World" }],
          params: {},
          rendered: { text: "Hello World" },
        },
      }),
    );
    expect((fake.lastRequest!.body as any).template).toEqual({ name: "hello_world", language: { code: "en_US", policy: "deterministic" }, components: [] });
  });

  test("e-mail content is refused without a request", async () => {
    expect(await adapter.send(msg({ type: "email", email: { subject: "x", text: "y" } }))).toMatchObject({
      ok: false,
      retry: false,
      reason: "PROVIDER_REJECTED",
    });
    expect(fake.requests).toHaveLength(0);
  });
});

describe("outbound failures (synchronous)", () => {
  const text = () => adapter.send(msg({ type: "text", text: "hi" }));
  test("131047 → MESSAGING_WINDOW_CLOSED, permanent", async () => {
    fake.failNext({
      kind: "graph",
      code: 131047,
      details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
    });
    expect(await text()).toMatchObject({
      ok: false,
      retry: false,
      reason: "MESSAGING_WINDOW_CLOSED",
      providerCode: "131047",
      message: expect.stringContaining("24 hours"),
    });
  });
  test("190 (HTTP 401) → AUTH_FAILED + accountStatus auth_failed", async () => {
    fake.failNext({ kind: "graph", code: 190 });
    expect(await text()).toMatchObject({ ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" });
  });
  test("a token the fake does not know → 190 from the fake itself", async () => {
    const { ctx } = createTestContext({
      provider: "whatsapp-cloud",
      channel: "whatsapp",
      settings: { phone_number_id: PHONE_ID, access_token: "stale", app_secret: "s", verify_token: "v", base_url: fake.url },
    });
    expect(await createWhatsappCloudAdapter(ctx).send(msg({ type: "text", text: "x" }))).toMatchObject({
      ok: false,
      reason: "AUTH_FAILED",
      accountStatus: "auth_failed",
    });
  });
  test("130429 as HTTP 429 with Retry-After → retry RATE_LIMITED with the delay", async () => {
    fake.failNext({ kind: "graph", code: 130429, status: 429, headers: { "retry-after": "2" } });
    expect(await text()).toMatchObject({ ok: false, retry: true, reason: "RATE_LIMITED", retryAfterMs: 2000, providerCode: "130429" });
  });
  test("a bare 503 → retry PROVIDER_UNAVAILABLE", async () => {
    fake.failNext({ kind: "http", status: 503, body: "upstream unavailable" });
    expect(await text()).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "http_503" });
  });
  test("a dropped connection → retry PROVIDER_UNAVAILABLE", async () => {
    fake.failNext({ kind: "drop" });
    expect(await text()).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "network" });
  });
  test("132001 template missing → TEMPLATE_INVALID", async () => {
    fake.failNext({ kind: "graph", code: 132001 });
    const r = await adapter.send(msg({ type: "template", template: { name: "nope", language: "en", components: [], params: {}, rendered: { text: "" } } }));
    expect(r).toMatchObject({ ok: false, retry: false, reason: "TEMPLATE_INVALID", providerCode: "132001" });
  });
});

describe("outbound failures (asynchronous, via the status webhook)", () => {
  test("send accepted, then a signed failed status arrives with the mapped reason", async () => {
    fake.failNextAsync({ code: 131026, details: "Message Undeliverable." });
    const result = await adapter.send(msg({ type: "text", text: "hi" }));
    expect(result.ok).toBe(true);
    await fake.settle();
    expect(hooks.events()).toEqual([
      {
        kind: "status",
        providerMessageId: result.ok ? result.providerMessageId : "",
        status: "failed",
        timestamp: expect.any(Date),
        error: { reason: "RECIPIENT_INVALID", providerCode: "131026", message: "Message undeliverable: Message Undeliverable." },
      },
    ]);
  });
});

describe("webhooks over HTTP", () => {
  const payload = () =>
    whatsappPayloads.status({ phoneNumberId: PHONE_ID, id: "wamid.X", status: "delivered", recipientId: "4915112345678", timestamp: "1736942400" });

  test("a correctly signed POST → 200 and events", async () => {
    const answer = await fake.pushWebhook({ url: hooks.url, payload: payload(), appSecret: APP_SECRET });
    expect(answer.status).toBe(200);
    expect(hooks.events()).toEqual([{ kind: "status", providerMessageId: "wamid.X", status: "delivered", timestamp: new Date(1736942400 * 1000) }]);
  });
  test("wrong, missing, or right for a body altered by one byte after signing → 401, zero events", () =>
    expectForgedSignaturesRefused({ fake, hooks, payload: payload(), appSecret: APP_SECRET }));
  test("handshake: right token → 200 challenge as text; wrong token → 403", () => expectHandshake({ hooks, verifyToken: VERIFY, challenge: "1158201444" }));
});

describe("syncTemplates", () => {
  test("follows paging (cursors.after while paging.next) and maps Meta's shapes", async () => {
    fake.templates = [
      metaTemplate({
        name: "hello_world",
        language: "en_US",
        status: "APPROVED",
        category: "UTILITY",
        components: [
          { type: "HEADER", format: "TEXT", text: "Hello World" },
          { type: "BODY", text: "Welcome {{1}}" },
          { type: "FOOTER", text: "WhatsApp Business Platform sample message" },
        ],
      }),
      metaTemplate({
        name: "order_update",
        status: "PENDING",
        category: "MARKETING",
        components: [
          { type: "HEADER", format: "IMAGE", example: { header_handle: ["https://x"] } },
          { type: "BODY", text: "Order {{1}}" },
          {
            type: "BUTTONS",
            buttons: [
              { type: "URL", text: "Track", url: "https://shop.example/t/{{1}}" },
              { type: "QUICK_REPLY", text: "Stop" },
              { type: "PHONE_NUMBER", text: "Call", phone_number: "+15550001111" },
              { type: "COPY_CODE", example: "SAVE10" },
            ],
          },
        ],
      }),
      metaTemplate({ name: "t3", status: "REJECTED" }),
      metaTemplate({ name: "t4", status: "PAUSED" }),
      metaTemplate({ name: "t5", status: "DISABLED", language: "de" }),
    ];
    const templates = await adapter.syncTemplates!();
    const calls = fake.requestsTo("message_templates");
    expect(calls).toHaveLength(3);
    expect(calls[0].path).toBe(`/v23.0/${WABA_ID}/message_templates`);
    expect(calls[0].headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(calls[0].query.get("after")).toBeNull();
    expect(calls[1].query.get("after")).toBeTruthy();
    expect(calls[2].query.get("after")).toBeTruthy();
    expect(templates.map((t) => [t.name, t.status])).toEqual([
      ["hello_world", "approved"],
      ["order_update", "pending"],
      ["t3", "rejected"],
      ["t4", "paused"],
      ["t5", "disabled"],
    ]);
    expect(templates[0]).toEqual({
      providerTemplateId: expect.any(String),
      name: "hello_world",
      language: "en_US",
      category: "utility",
      status: "approved",
      components: [
        { type: "header", format: "text", text: "Hello World" },
        { type: "body", text: "Welcome {{1}}" },
        { type: "footer", text: "WhatsApp Business Platform sample message" },
      ],
    });
    expect(templates[1].components).toEqual([
      { type: "header", format: "image" },
      { type: "body", text: "Order {{1}}" },
      {
        type: "buttons",
        buttons: [
          { type: "url", text: "Track", url: "https://shop.example/t/{{1}}" },
          { type: "quick_reply", text: "Stop" },
          { type: "phone_number", text: "Call", phoneNumber: "+15550001111" },
          { type: "copy_code", text: "Copy code" },
        ],
      },
    ]);
  });

  test("a Graph error during sync throws with the mapped failure (190 → auth_failed)", async () => {
    fake.failNext({ kind: "graph", code: 190 });
    const error = await adapter.syncTemplates!().catch((e) => e);
    expect(error).toBeInstanceOf(GraphRequestError);
    expect((error as GraphRequestError).failure).toMatchObject({ reason: "AUTH_FAILED", accountStatus: "auth_failed" });
  });
});

describe("interactive (DESIGN §16)", () => {
  const push = (payload: unknown) => fake.pushWebhook({ url: hooks.url, payload, appSecret: APP_SECRET });

  test("buttons: type interactive / button with reply buttons, header, footer and context (exact bytes)", async () => {
    const result = await adapter.send(
      msg(
        {
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
        },
        { replyTo: { providerMessageId: "wamid.ORIGINAL" } },
      ),
    );
    expect(result).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^wamid\./) });
    expect(new TextDecoder().decode(fake.lastRequest!.raw)).toBe(
      '{"messaging_product":"whatsapp","recipient_type":"individual","to":"4915112345678","type":"interactive","interactive":{"type":"button","header":{"type":"text","text":"Booking"},"body":{"text":"Keep your table?"},"footer":{"text":"Reply by Thursday"},"action":{"buttons":[{"type":"reply","reply":{"id":"keep","title":"Keep it"}},{"type":"reply","reply":{"id":"cancel","title":"Cancel"}}]}},"context":{"message_id":"wamid.ORIGINAL"}}',
    );
  });

  test("list: type interactive / list with action.button and sections of rows (exact bytes)", async () => {
    await adapter.send(
      msg({
        type: "interactive",
        interactive: {
          kind: "list",
          body: { text: "Pick a slot" },
          list: {
            button: "Slots",
            sections: [{ title: "Tomorrow", rows: [{ id: "am", title: "Morning", description: "08-12" }] }, { rows: [{ id: "pm", title: "Afternoon" }] }],
          },
        },
      }),
    );
    expect(new TextDecoder().decode(fake.lastRequest!.raw)).toBe(
      '{"messaging_product":"whatsapp","recipient_type":"individual","to":"4915112345678","type":"interactive","interactive":{"type":"list","body":{"text":"Pick a slot"},"action":{"button":"Slots","sections":[{"title":"Tomorrow","rows":[{"id":"am","title":"Morning","description":"08-12"}]},{"rows":[{"id":"pm","title":"Afternoon"}]}]}}}',
    );
  });

  test("the fake refuses what Cloud API refuses (4 buttons): a permanent PROVIDER_REJECTED", async () => {
    const four = Array.from({ length: 4 }, (_, i) => ({ id: `b${i}`, title: `B${i}` }));
    const result = await adapter.send(msg({ type: "interactive", interactive: { kind: "buttons", body: { text: "?" }, buttons: four } }));
    expect(result).toMatchObject({ ok: false, retry: false, providerCode: "131009" });
  });

  test("button_reply and list_reply taps through the signed webhook → interactive with context.id as inReplyTo", async () => {
    for (const kind of ["button_reply", "list_reply"] as const) {
      hooks.results.length = 0;
      await push(
        whatsappPayloads.tap({ phoneNumberId: PHONE_ID, from: "4915112345678", contextId: "wamid.OURS", kind, reply: { id: "keep", title: "Keep it" } }),
      );
      expect(hooks.events()).toMatchObject([
        {
          kind: "message",
          from: { value: "+4915112345678" },
          content: { type: "interactive", interactive: { replyId: "keep", replyTitle: "Keep it" } },
          inReplyTo: "wamid.OURS",
        },
      ]);
    }
  });
});
