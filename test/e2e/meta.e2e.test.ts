/**
 * WhatsApp Cloud, Messenger and Instagram end to end: the compiled binary configured against the Graph
 * fake (test/fakes/graph.fake.ts), driven over HTTP like an operator's systems would. Per provider the
 * sandbox scenarios: signed inbound opens the window, free reply inside it (exact provider body), template
 * outside it, statuses to GET /messages/{id} and webhooks, provider failures to message.failed with a
 * reason, retries, auth failure → account status, handshake and forged signatures; plus template sync
 * (on start and `switchboard templates sync`) and WhatsApp media upload with the cached provider id.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { graphErrorBody, instagramPayloads, messengerPayloads, metaTemplate, startGraphFake, whatsappPayloads, type GraphFake } from "../fakes/graph.fake";
import { startReceiver } from "../../src/modules/webhooks/webhooks.test-receiver";
import { ensureBinary, run, serve, tempDir, type RunningServer } from "./binary";

const WA = {
  id: "0193a4b2-0000-7000-8000-00000000e001",
  phoneNumberId: "1098765432",
  wabaId: "WABA_77",
  token: "wa-token",
  secret: "wa-app-secret",
  verify: "wa-verify",
};
const FB = { id: "0193a4b2-0000-7000-8000-00000000e002", pageId: "2233445566", token: "page-token", secret: "fb-app-secret", verify: "fb-verify" };
const IG = { id: "0193a4b2-0000-7000-8000-00000000e003", igUserId: "17840000000001", token: "ig-token", secret: "ig-app-secret", verify: "ig-verify" };
const HOUR = 3_600_000;
const PUBLIC_URL = "https://switchboard.example.com";

// A 1×1 PNG (real bytes: POST /media sniffs the content).
const PNG = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="), (c) => c.charCodeAt(0));

let dir: string;
let configPath: string;
let fake: GraphFake;
let server: RunningServer;
let key: string;
let receiver: ReturnType<typeof startReceiver>;

const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
  const r = await fetch(`${server.url}/api/public/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && !(body instanceof FormData) ? { "content-type": "application/json" } : {}) },
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
};
const hook = (accountId: string) => `${server.url}/hooks/${accountId}`;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}\n--- server output (tail) ---\n${server.output().slice(-4000)}`);
    await Bun.sleep(50);
  }
}

const waitStatus = (id: string, status: string, timeoutMs?: number) =>
  waitFor(
    `message ${id} ${status}`,
    async () => {
      const r = await api("GET", `/messages/${id}`);
      return r.body?.data?.status === status ? r.body.data : undefined;
    },
    timeoutMs,
  );

/** Webhook events (our outbound webhooks) of one message, in arrival order. */
const eventsOf = (messageId: string) =>
  receiver.received.map((r) => JSON.parse(r.body) as { type: string; data: { message?: any } }).filter((e) => e.data.message?.id === messageId);
const waitEvents = (messageId: string, types: string[]) =>
  waitFor(`events ${types.join(",")} of ${messageId}`, () => {
    const got = eventsOf(messageId).map((e) => e.type);
    return types.every((t) => got.includes(t)) ? eventsOf(messageId) : undefined;
  });

/** The recorded provider request (JSON body) that sent to `recipient`, newest first. */
const sentTo = (path: string, match: (body: any) => boolean): { body: any; headers: Record<string, string> } | undefined =>
  [...fake.requestsTo(path)].reverse().find((r) => r.method === "POST" && match(r.body));

/** Like `run`, but without blocking this process: the Graph fake the command talks to lives here. */
async function runAsync(args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([ensureBinary(), ...args], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

async function send(body: Record<string, unknown>): Promise<{ status: number; body: any }> {
  return api("POST", "/messages", body);
}

beforeAll(async () => {
  fake = startGraphFake({ templatePageSize: 2 });
  fake.templates = [
    metaTemplate({
      name: "order_update",
      language: "en_US",
      components: [
        { type: "HEADER", format: "TEXT", text: "Order news" },
        { type: "BODY", text: "Hello {{1}}, order {{2}} has shipped.", example: { body_text: [["Ann", "A-1"]] } },
        { type: "FOOTER", text: "Acme" },
        { type: "BUTTONS", buttons: [{ type: "URL", text: "Track", url: "https://acme.example/track/{{1}}" }] },
      ],
    }),
    metaTemplate({ name: "spring_sale", language: "en_US", status: "PAUSED", category: "MARKETING" }),
    metaTemplate({ name: "hello_meta", language: "en_US" }),
  ];
  receiver = startReceiver();
  dir = tempDir("sb-meta-e2e-");
  configPath = join(dir, "config.toml");
  writeFileSync(
    configPath,
    `[server]
public_url = "${PUBLIC_URL}"
[storage]
data_dir = "${join(dir, "data")}"
[log]
level = "debug"

[[channels]]
id = "${WA.id}"
company = "acme"
channel = "whatsapp"
provider = "whatsapp-cloud"
name = "WhatsApp Cloud"
default = true
[channels.settings]
phone_number_id = "${WA.phoneNumberId}"
waba_id = "${WA.wabaId}"
access_token = "env:SB_E2E_WA_TOKEN"
app_secret = "${WA.secret}"
verify_token = "${WA.verify}"
base_url = "${fake.url}"

[[channels]]
id = "${FB.id}"
company = "acme"
channel = "messenger"
provider = "messenger"
name = "Messenger"
default = true
[channels.settings]
page_id = "${FB.pageId}"
page_access_token = "${FB.token}"
app_secret = "${FB.secret}"
verify_token = "${FB.verify}"
base_url = "${fake.url}"

[[channels]]
id = "${IG.id}"
company = "acme"
channel = "instagram"
provider = "instagram"
name = "Instagram"
default = true
[channels.settings]
ig_user_id = "${IG.igUserId}"
access_token = "${IG.token}"
app_secret = "${IG.secret}"
verify_token = "${IG.verify}"
base_url = "${fake.url}"
`,
  );
  const env = { SB_E2E_WA_TOKEN: WA.token };
  expect(run(["companies", "create", "--slug", "acme", "--name", "Acme", "--balance", "10", "--config", configPath], { env }).code).toBe(0);
  const k = run(["keys", "create", "--company", "acme", "--name", "e2e", "--scopes", "*", "--json", "--config", configPath], { env });
  expect(k.code).toBe(0);
  key = JSON.parse(k.stdout).key;
  server = await serve(configPath, env);
  // Async WhatsApp statuses (failNextAsync) go to the WhatsApp account's hook, signed with its secret.
  fake.setWebhookTarget({ url: hook(WA.id), appSecret: WA.secret });
  const endpoint = await api("POST", "/webhooks", { url: receiver.url, events: ["message.*"] });
  expect(endpoint.status).toBe(201);
}, 60_000);

afterAll(async () => {
  if (server) expect(await server.stop("SIGTERM")).toBe(0);
  await fake?.stop();
  receiver?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// ================================================================ channels and templates at start

describe("start-up", () => {
  test("GET /channels lists the three accounts, active, with the webhook URL to register", async () => {
    const r = await api("GET", "/channels");
    expect(r.status).toBe(200);
    const byId = Object.fromEntries(r.body.data.map((c: any) => [c.id, c]));
    expect(byId[WA.id]).toMatchObject({ channel: "whatsapp", provider: "whatsapp-cloud", status: "active", webhookUrl: `${PUBLIC_URL}/hooks/${WA.id}` });
    expect(byId[FB.id]).toMatchObject({ channel: "messenger", provider: "messenger", status: "active", webhookUrl: `${PUBLIC_URL}/hooks/${FB.id}` });
    expect(byId[IG.id]).toMatchObject({ channel: "instagram", provider: "instagram", status: "active", webhookUrl: `${PUBLIC_URL}/hooks/${IG.id}` });
  });

  test("WhatsApp templates are synced at start (paginated, with the bearer token)", async () => {
    const list = await waitFor("synced templates", async () => {
      const r = await api("GET", "/templates?channel=whatsapp");
      return r.body.data?.some((t: any) => t.name === "order_update") ? r.body.data : undefined;
    });
    const order = list.find((t: any) => t.name === "order_update");
    expect(order).toMatchObject({ language: "en_US", status: "approved", params: ["body.1", "body.2", "button.0.1"] });
    const calls = fake.requestsTo(`${WA.wabaId}/message_templates`);
    expect(calls.length).toBeGreaterThanOrEqual(2); // 3 templates in pages of 2
    expect(calls[0]!.headers.authorization).toBe(`Bearer ${WA.token}`);
  });
});

// ================================================================ WhatsApp Cloud

describe("WhatsApp Cloud", () => {
  const ann = "14155550101";
  let annContactId: string;
  let firstOutbound: string;

  test("a signed inbound message creates contact, conversation and opens the window (message.received)", async () => {
    const payload = whatsappPayloads.text({
      phoneNumberId: WA.phoneNumberId,
      from: ann,
      name: "Ann Lee",
      text: "Where is my order?",
      id: "wamid.IN1",
      referral: { source_type: "ad", source_id: "ad-42", source_url: "https://fb.me/ad" },
    });
    const r = await fake.pushWebhook({ url: hook(WA.id), payload, appSecret: WA.secret });
    expect(r.status).toBe(200);
    const received = await waitFor("message.received", () =>
      receiver.received.map((x) => JSON.parse(x.body)).find((e) => e.type === "message.received" && e.data.message.providerMessageId === "wamid.IN1"),
    );
    const m = received.data.message;
    expect(m).toMatchObject({
      direction: "inbound",
      channel: "whatsapp",
      channelAccountId: WA.id,
      type: "text",
      address: "+14155550101",
      content: { text: "Where is my order?", referral: { source_id: "ad-42" } },
    });
    annContactId = m.contactId;
    const contact = await api("GET", `/contacts/${annContactId}`);
    expect(contact.body.data.identities).toContainEqual(expect.objectContaining({ channel: "whatsapp", value: "+14155550101" }));
    const conv = await api("GET", `/conversations/${m.conversationId}`);
    expect(conv.status).toBe(200);

    // The same delivery again (Meta retries) is ignored.
    expect((await fake.pushWebhook({ url: hook(WA.id), payload, appSecret: WA.secret })).status).toBe(200);
    await Bun.sleep(100);
    expect(receiver.received.filter((x) => JSON.parse(x.body).data.message?.providerMessageId === "wamid.IN1")).toHaveLength(1);
  });

  test("inbound media, location and contacts are stored as typed content", async () => {
    const push = (id: string, message: Record<string, unknown>) =>
      fake.pushWebhook({
        url: hook(WA.id),
        appSecret: WA.secret,
        payload: whatsappPayloads.inbound({ phoneNumberId: WA.phoneNumberId, from: ann, id, message }),
      });
    await push("wamid.IMG", { type: "image", image: { id: "MEDIA_9", mime_type: "image/jpeg", caption: "my receipt", sha256: "x" } });
    await push("wamid.LOC", { type: "location", location: { latitude: 52.52, longitude: 13.405, name: "Office" } });
    await push("wamid.VCF", { type: "contacts", contacts: [{ name: { formatted_name: "Bob" }, phones: [{ phone: "+14155550100" }] }] });
    const byId = async (pid: string) =>
      (await waitFor(pid, () => receiver.received.map((x) => JSON.parse(x.body)).find((e) => e.data.message?.providerMessageId === pid))).data.message;
    expect(await byId("wamid.IMG")).toMatchObject({
      type: "media",
      content: { media: { kind: "image", providerMediaId: "MEDIA_9", mimeType: "image/jpeg", caption: "my receipt" } },
    });
    expect(await byId("wamid.LOC")).toMatchObject({ type: "location", content: { location: { latitude: 52.52, longitude: 13.405, name: "Office" } } });
    expect(await byId("wamid.VCF")).toMatchObject({ type: "contacts", content: { contacts: [{ name: { formatted_name: "Bob" } }] } });
  });

  test("a free text reply inside the window goes out with the exact Cloud API body, and statuses flow back", async () => {
    const r = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "It ships today.", metadata: { ticket: "T-1" } });
    expect(r.status).toBe(202);
    expect(r.body.data).toMatchObject({ status: "queued", priceType: "free", charged: false });
    firstOutbound = r.body.data.id;
    const sent = await waitStatus(firstOutbound, "sent");
    const req = sentTo(`${WA.phoneNumberId}/messages`, (b) => b.text?.body === "It ships today.")!;
    expect(req.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: ann,
      type: "text",
      text: { body: "It ships today.", preview_url: false },
    });
    expect(req.headers.authorization).toBe(`Bearer ${WA.token}`);
    expect(sent.providerMessageId).toStartWith("wamid.");

    for (const status of ["delivered", "read"] as const)
      expect(
        (
          await fake.pushWebhook({
            url: hook(WA.id),
            appSecret: WA.secret,
            payload: whatsappPayloads.status({ phoneNumberId: WA.phoneNumberId, id: sent.providerMessageId, status, recipientId: ann }),
          })
        ).status,
      ).toBe(200);
    const read = await waitStatus(firstOutbound, "read");
    expect(read.statusTimes.deliveredAt).not.toBeNull();
    expect(read.statusTimes.readAt).not.toBeNull();
    const events = await waitEvents(firstOutbound, ["message.sent", "message.delivered", "message.read"]);
    expect(events.map((e) => e.type)).toEqual(["message.sent", "message.delivered", "message.read"]);
    expect(events[2]!.data.message.metadata).toEqual({ ticket: "T-1" });
  });

  test("a reply to an inbound message carries the context", async () => {
    const inbound = receiver.received.map((x) => JSON.parse(x.body)).find((e) => e.data.message?.providerMessageId === "wamid.IN1").data.message;
    const r = await send({ channel: "whatsapp", to: { contactId: annContactId }, type: "text", text: "Replying", replyToMessageId: inbound.id });
    expect(r.status).toBe(202);
    await waitStatus(r.body.data.id, "sent");
    expect(sentTo(`${WA.phoneNumberId}/messages`, (b) => b.text?.body === "Replying")!.body.context).toEqual({ message_id: "wamid.IN1" });
  });

  test("outside the window: free text is 422 MESSAGING_WINDOW_CLOSED, a template goes out with components from params (charged)", async () => {
    const old = "14155550102";
    const ts = String(Math.floor((Date.now() - 25 * HOUR) / 1000));
    expect(
      (
        await fake.pushWebhook({
          url: hook(WA.id),
          appSecret: WA.secret,
          payload: whatsappPayloads.text({ phoneNumberId: WA.phoneNumberId, from: old, text: "old", timestamp: ts }),
        })
      ).status,
    ).toBe(200);
    await waitFor("old contact", async () => (await api("GET", "/contacts?q=14155550102")).body.data?.length);

    const text = await send({ channel: "whatsapp", to: { phone: "+14155550102" }, type: "text", text: "hi again" });
    expect(text.status).toBe(422);
    expect(text.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");
    expect((await send({ channel: "whatsapp", to: { phone: "+14155550109" }, type: "text", text: "cold" })).body.error.code).toBe("MESSAGING_WINDOW_CLOSED");

    const r = await send({
      channel: "whatsapp",
      to: { phone: "+14155550102" },
      type: "template",
      template: { name: "order_update", language: "en_US", params: { "body.1": "Bob", "body.2": "A-7", "button.0.1": "A7" } },
    });
    expect(r.status).toBe(202);
    expect(r.body.data).toMatchObject({ priceType: "wa_template_text", unitPrice: "0.050000", charged: true });
    await waitStatus(r.body.data.id, "sent");
    const req = sentTo(`${WA.phoneNumberId}/messages`, (b) => b.type === "template" && b.to === old)!;
    expect(req.body).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: old,
      type: "template",
      template: {
        name: "order_update",
        language: { code: "en_US", policy: "deterministic" },
        components: [
          {
            type: "body",
            parameters: [
              { type: "text", text: "Bob" },
              { type: "text", text: "A-7" },
            ],
          },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "A7" }] },
        ],
      },
    });
  });

  test("a template paused at the provider is refused at send (422 /template)", async () => {
    const r = await send({
      channel: "whatsapp",
      to: { phone: "+14155550102" },
      type: "template",
      template: { name: "spring_sale", params: { "body.1": "x" } },
    });
    expect(r.status).toBe(422);
    expect(r.body.error.details[0].pointer).toStartWith("/template");
  });

  test("sync Graph error 131047 → message.failed MESSAGING_WINDOW_CLOSED; nothing retried", async () => {
    fake.failNext({ kind: "graph", code: 131047 }, { path: `${WA.phoneNumberId}/messages` });
    const r = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "window says Meta" });
    const failed = await waitStatus(r.body.data.id, "failed");
    expect(failed.error).toMatchObject({ reason: "MESSAGING_WINDOW_CLOSED", code: "131047" });
    const [event] = (await waitEvents(r.body.data.id, ["message.failed"])).filter((e) => e.type === "message.failed");
    expect(event!.data.message.error.reason).toBe("MESSAGING_WINDOW_CLOSED");
    expect(fake.requestsTo(`${WA.phoneNumberId}/messages`).filter((q: any) => q.body?.text?.body === "window says Meta")).toHaveLength(1);
  });

  test("async failed status (131026) after a 200 → sent then message.failed RECIPIENT_INVALID", async () => {
    fake.failNextAsync({ code: 131026 });
    const r = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "async doom" });
    const failed = await waitStatus(r.body.data.id, "failed");
    expect(failed.error).toMatchObject({ reason: "RECIPIENT_INVALID", code: "131026" });
    const types = (await waitEvents(r.body.data.id, ["message.sent", "message.failed"])).map((e) => e.type);
    expect(types).toEqual(["message.sent", "message.failed"]);
  });

  test("130429 throttling is retried with backoff and sent once the provider recovers", async () => {
    fake.failNext({ kind: "graph", code: 130429, status: 429 }, { path: `${WA.phoneNumberId}/messages` });
    const r = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "patience" });
    const sent = await waitStatus(r.body.data.id, "sent", 15_000);
    expect(sent.error).toBeNull();
    expect(fake.requestsTo(`${WA.phoneNumberId}/messages`).filter((q: any) => q.body?.text?.body === "patience")).toHaveLength(2);
  });

  test("media: a POST /media upload is uploaded to WhatsApp once, the cached media id is reused", async () => {
    const form = new FormData();
    form.set("file", new Blob([PNG], { type: "image/png" }), "dot.png");
    form.set("channel", "whatsapp");
    const up = await api("POST", "/media", form);
    expect(up.status).toBe(201);
    const mediaId = up.body.data.id;
    const uploadsBefore = fake.requestsTo(`${WA.phoneNumberId}/media`).length;

    const first = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { mediaId, caption: "the dot" } });
    expect(first.status).toBe(202);
    await waitStatus(first.body.data.id, "sent");
    const second = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { mediaId } });
    await waitStatus(second.body.data.id, "sent");

    const uploads = fake.requestsTo(`${WA.phoneNumberId}/media`).slice(uploadsBefore);
    expect(uploads).toHaveLength(1);
    expect(uploads[0]!.body).toMatchObject({ messaging_product: "whatsapp", type: "image/png" });
    const images: { body: any }[] = fake
      .requestsTo(`${WA.phoneNumberId}/messages`)
      .filter((q: any) => q.body?.type === "image")
      .slice(-2);
    expect(images[0]!.body.image).toEqual({ id: expect.any(String), caption: "the dot" });
    expect(images[1]!.body.image).toEqual({ id: images[0]!.body.image.id });
  });

  test("media by URL goes out as a link", async () => {
    const r = await send({
      channel: "whatsapp",
      to: { phone: "+14155550101" },
      type: "media",
      media: { url: "https://cdn.example/files/invoice.pdf", caption: "Invoice" },
    });
    await waitStatus(r.body.data.id, "sent");
    expect(sentTo(`${WA.phoneNumberId}/messages`, (b) => b.type === "document")!.body.document).toEqual({
      link: "https://cdn.example/files/invoice.pdf",
      caption: "Invoice",
      filename: "invoice.pdf",
    });
  });

  test("`switchboard templates sync` picks up a status change; the paused template is then refused", async () => {
    fake.templates[0]!.status = "PAUSED";
    const r = await runAsync(["templates", "sync", "--json", "--config", configPath], { SB_E2E_WA_TOKEN: WA.token });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toContainEqual(expect.objectContaining({ accountId: WA.id, provider: "whatsapp-cloud", synced: 3 }));
    const refused = await send({
      channel: "whatsapp",
      to: { phone: "+14155550102" },
      type: "template",
      template: { name: "order_update", params: { "body.1": "B", "body.2": "C", "button.0.1": "D" } },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details[0]).toMatchObject({ pointer: "/template", message: "template is paused" });

    fake.templates[0]!.status = "APPROVED";
    const text = await runAsync(["templates", "sync", "--config", configPath], { SB_E2E_WA_TOKEN: WA.token });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("3 template(s)");
    expect((await api("GET", "/templates?channel=whatsapp")).body.data.find((t: any) => t.name === "order_update").status).toBe("approved");
  });

  test("190 (token expired) → message.failed AUTH_FAILED and the account shows auth_failed; a later success clears it", async () => {
    fake.failNext({ kind: "graph", code: 190 }, { path: `${WA.phoneNumberId}/messages` });
    const r = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "dead token" });
    const failed = await waitStatus(r.body.data.id, "failed");
    expect(failed.error).toMatchObject({ reason: "AUTH_FAILED", code: "190" });
    const channels = await api("GET", "/channels");
    expect(channels.body.data.find((c: any) => c.id === WA.id).status).toBe("auth_failed");

    const ok = await send({ channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "token renewed" });
    await waitStatus(ok.body.data.id, "sent");
    expect((await api("GET", "/channels")).body.data.find((c: any) => c.id === WA.id).status).toBe("active");
  });
});

// ================================================================ Messenger

describe("Messenger", () => {
  const psid = "6100000000000001";

  test("a signed inbound message creates the contact and opens the window", async () => {
    const payload = messengerPayloads.message({
      accountId: FB.pageId,
      senderId: psid,
      text: "Hello page",
      mid: "m_FB_IN1",
      referral: { ref: "summer", source: "ADS", type: "OPEN_THREAD", ad_id: "ad-9" },
    });
    expect((await fake.pushWebhook({ url: hook(FB.id), payload, appSecret: FB.secret })).status).toBe(200);
    const e = await waitFor("messenger message.received", () =>
      receiver.received.map((x) => JSON.parse(x.body)).find((x) => x.data.message?.providerMessageId === "m_FB_IN1"),
    );
    expect(e.data.message).toMatchObject({ channel: "messenger", address: psid, content: { text: "Hello page", referral: { ad_id: "ad-9" } } });
    // Echoes of our own messages are not inbound.
    await fake.pushWebhook({
      url: hook(FB.id),
      appSecret: FB.secret,
      payload: messengerPayloads.message({ accountId: FB.pageId, senderId: psid, text: "echo", mid: "m_FB_ECHO", isEcho: true }),
    });
    await Bun.sleep(100);
    expect(receiver.received.some((x) => JSON.parse(x.body).data.message?.providerMessageId === "m_FB_ECHO")).toBe(false);
  });

  test("a reply goes out with the exact Send API body; delivery and read watermarks reach GET /messages/{id} and webhooks", async () => {
    const r = await send({ channel: "messenger", to: { handle: psid }, type: "text", text: "Hi from the page" });
    expect(r.status).toBe(202);
    const sent = await waitStatus(r.body.data.id, "sent");
    const req = sentTo(`${FB.pageId}/messages`, (b) => b.message?.text === "Hi from the page")!;
    expect(req.body).toEqual({ recipient: { id: psid }, messaging_type: "RESPONSE", message: { text: "Hi from the page" } });
    expect(req.headers.authorization).toBe(`Bearer ${FB.token}`);
    expect(sent.providerMessageId).toStartWith("m_");

    const later = Date.now() + 1000;
    await fake.pushWebhook({
      url: hook(FB.id),
      appSecret: FB.secret,
      payload: messengerPayloads.delivery({ accountId: FB.pageId, senderId: psid, watermark: later }),
    });
    await waitStatus(r.body.data.id, "delivered");
    await fake.pushWebhook({
      url: hook(FB.id),
      appSecret: FB.secret,
      payload: messengerPayloads.read({ accountId: FB.pageId, senderId: psid, watermark: later }),
    });
    await waitStatus(r.body.data.id, "read");
    expect((await waitEvents(r.body.data.id, ["message.sent", "message.delivered", "message.read"])).map((e) => e.type)).toEqual([
      "message.sent",
      "message.delivered",
      "message.read",
    ]);
  });

  test("a delivery whose watermark predates our sentAt (delivered within the Send API round trip) still counts by its mids", async () => {
    const r = await send({ channel: "messenger", to: { handle: psid }, type: "text", text: "quick one" });
    const sent = await waitStatus(r.body.data.id, "sent");
    const watermark = Date.parse(sent.statusTimes.sentAt) - 500;
    await fake.pushWebhook({
      url: hook(FB.id),
      appSecret: FB.secret,
      payload: messengerPayloads.delivery({ accountId: FB.pageId, senderId: psid, watermark, mids: [sent.providerMessageId] }),
    });
    const delivered = await waitStatus(r.body.data.id, "delivered");
    expect(Date.parse(delivered.statusTimes.deliveredAt)).toBe(watermark);
  });

  test("outside the window (or never written) free text is 422 MESSAGING_WINDOW_CLOSED", async () => {
    const ts = Date.now() - 25 * HOUR;
    await fake.pushWebhook({
      url: hook(FB.id),
      appSecret: FB.secret,
      payload: messengerPayloads.message({ accountId: FB.pageId, senderId: "6100000000000002", text: "old", timestamp: ts }),
    });
    await waitFor("old psid", async () => (await api("GET", "/contacts?q=6100000000000002")).body.data?.length);
    const r = await send({ channel: "messenger", to: { handle: "6100000000000002" }, type: "text", text: "late" });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");
  });

  test("provider failures: 551 → USER_BLOCKED, 10/2018278 → MESSAGING_WINDOW_CLOSED; 613 is retried", async () => {
    fake.failNext({ kind: "graph", code: 551, subcode: 1545041 }, { path: `${FB.pageId}/messages` });
    const blocked = await send({ channel: "messenger", to: { handle: psid }, type: "text", text: "blocked?" });
    expect((await waitStatus(blocked.body.data.id, "failed")).error).toMatchObject({ reason: "USER_BLOCKED" });
    expect((await waitEvents(blocked.body.data.id, ["message.failed"])).at(-1)!.data.message.error.reason).toBe("USER_BLOCKED");

    // The block removed consent; the contact writes again and opts back in for the next tests.
    await fake.pushWebhook({
      url: hook(FB.id),
      appSecret: FB.secret,
      payload: messengerPayloads.message({ accountId: FB.pageId, senderId: psid, text: "start" }),
    });
    await waitFor("opt-in", async () => {
      const c = await api("GET", `/contacts/${blocked.body.data.contactId}`);
      return c.body.data.consent?.messenger?.status === "opted_in";
    });

    fake.failNext({ kind: "graph", code: 10, subcode: 2018278 }, { path: `${FB.pageId}/messages` });
    const win = await send({ channel: "messenger", to: { handle: psid }, type: "text", text: "window?" });
    expect(win.status).toBe(202);
    expect((await waitStatus(win.body.data.id, "failed")).error).toMatchObject({ reason: "MESSAGING_WINDOW_CLOSED", code: "10/2018278" });

    fake.failNext({ kind: "http", status: 400, body: graphErrorBody({ code: 613 }) }, { path: `${FB.pageId}/messages` });
    const slow = await send({ channel: "messenger", to: { handle: psid }, type: "text", text: "throttled" });
    await waitStatus(slow.body.data.id, "sent", 15_000);
    expect(fake.requestsTo(`${FB.pageId}/messages`).filter((q: any) => q.body?.message?.text === "throttled")).toHaveLength(2);
  });
});

// ================================================================ Instagram

describe("Instagram", () => {
  const igsid = "1780000000000042";

  test("inbound opens the window; reply body exact; messaging_seen marks it read", async () => {
    expect(
      (
        await fake.pushWebhook({
          url: hook(IG.id),
          appSecret: IG.secret,
          payload: instagramPayloads.message({ accountId: IG.igUserId, senderId: igsid, text: "hey", mid: "m_IG_IN1" }),
        })
      ).status,
    ).toBe(200);
    await waitFor("ig message.received", () => receiver.received.map((x) => JSON.parse(x.body)).find((x) => x.data.message?.providerMessageId === "m_IG_IN1"));

    const r = await send({ channel: "instagram", to: { handle: igsid }, type: "text", text: "hey back" });
    expect(r.status).toBe(202);
    const sent = await waitStatus(r.body.data.id, "sent");
    const req = sentTo(`${IG.igUserId}/messages`, (b) => b.message?.text === "hey back")!;
    expect(req.body).toEqual({ recipient: { id: igsid }, messaging_type: "RESPONSE", message: { text: "hey back" } });
    expect(req.headers.authorization).toBe(`Bearer ${IG.token}`);

    await fake.pushWebhook({
      url: hook(IG.id),
      appSecret: IG.secret,
      payload: instagramPayloads.seen({ accountId: IG.igUserId, senderId: igsid, mid: sent.providerMessageId, timestamp: Date.now() + 1000 }),
    });
    const read = await waitStatus(r.body.data.id, "read");
    expect(read.statusTimes.readAt).not.toBeNull();
    expect((await waitEvents(r.body.data.id, ["message.sent", "message.read"])).map((e) => e.type)).toContain("message.read");
  });

  test("outside the window: 422 MESSAGING_WINDOW_CLOSED; a provider failure becomes message.failed", async () => {
    const never = await send({ channel: "instagram", to: { handle: "1780000000000999" }, type: "text", text: "cold" });
    expect(never.status).toBe(422);
    expect(never.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");

    // A stored file of a type Instagram does not take is refused at acceptance, not failed later.
    const form = new FormData();
    form.set("file", new Blob(["plain notes\n"], { type: "text/plain" }), "notes.txt");
    const up = await api("POST", "/media", form);
    expect(up.status).toBe(201);
    const refused = await send({ channel: "instagram", to: { handle: igsid }, type: "media", media: { mediaId: up.body.data.id } });
    expect(refused.status).toBe(422);
    expect(refused.body.error.details[0]).toMatchObject({ pointer: "/media/mediaId", message: "text/plain files are not accepted on this account" });

    fake.failNext({ kind: "graph", code: 100, message: "(#100) No matching user found", subcode: 2018001 }, { path: `${IG.igUserId}/messages` });
    const r = await send({ channel: "instagram", to: { handle: igsid }, type: "text", text: "gone?" });
    expect((await waitStatus(r.body.data.id, "failed")).error).toMatchObject({ reason: "RECIPIENT_INVALID", code: "100/2018001" });
    expect((await waitEvents(r.body.data.id, ["message.failed"])).at(-1)!.data.message.error.reason).toBe("RECIPIENT_INVALID");
  });
});

// ================================================================ hook authentication (every provider)

describe.each([
  ["whatsapp", WA],
  ["messenger", FB],
  ["instagram", IG],
] as const)("%s hook authentication", (channel, acct) => {
  test("GET handshake answers the challenge; a wrong verify token is 403", async () => {
    const ok = await fetch(`${hook(acct.id)}?hub.mode=subscribe&hub.verify_token=${acct.verify}&hub.challenge=1158201444`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("1158201444");
    const bad = await fetch(`${hook(acct.id)}?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1158201444`);
    expect(bad.status).toBe(403);
    expect(await bad.text()).not.toContain("1158201444");
  });

  test("a forged, missing or body-tampered signature is 401 and stores nothing", async () => {
    const sender = channel === "whatsapp" ? "14155550777" : "9990000000000777";
    const payload =
      channel === "whatsapp"
        ? whatsappPayloads.text({ phoneNumberId: WA.phoneNumberId, from: sender, text: "forged" })
        : (channel === "messenger" ? messengerPayloads : instagramPayloads).message({
            accountId: channel === "messenger" ? FB.pageId : IG.igUserId,
            senderId: sender,
            text: "forged",
          });
    const secret = acct.secret;
    expect((await fake.pushWebhook({ url: hook(acct.id), payload, appSecret: secret, signature: "wrong" })).status).toBe(401);
    expect((await fake.pushWebhook({ url: hook(acct.id), payload, appSecret: secret, signature: "missing" })).status).toBe(401);
    expect(
      (
        await fake.pushWebhook({
          url: hook(acct.id),
          payload,
          appSecret: secret,
          mutate: (b) => new TextEncoder().encode(new TextDecoder().decode(b).replace("forged", "f0rged")),
        })
      ).status,
    ).toBe(401);
    // Signed with another account's secret: also refused.
    expect((await fake.pushWebhook({ url: hook(acct.id), payload, appSecret: acct === WA ? FB.secret : WA.secret })).status).toBe(401);
    await Bun.sleep(100);
    expect((await api("GET", `/contacts?q=${sender}`)).body.data).toEqual([]);
    expect(receiver.received.some((x) => x.body.includes("forged") || x.body.includes("f0rged"))).toBe(false);
  });
});
