/**
 * Telegram, X, TikTok and e-mail end to end through the compiled binary (issue 7): `serve` configured
 * with real provider adapters whose `base_url`s point at the loopback fakes (and a real SMTP peer), then
 * the sandbox scenarios for each provider — inbound opens the conversation/window, allowed replies go out
 * with the exact provider request, refused ones get the seed's codes, provider failures become
 * `message.failed` (checked on a registered webhook endpoint), blocks remove consent, forged inbound
 * requests are rejected and store nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, run, serve, tempDir, type RunningServer } from "./binary";
import { TelegramFake, telegramErrors } from "../fakes/telegram.fake";
import { parseOAuthHeader, XFake, xErrors } from "../fakes/x.fake";
import { TiktokFake, tiktokErrors } from "../fakes/tiktok.fake";
import { SmtpPeer } from "../fakes/smtp.peer";

const ID = {
  tgPoll: "0193a4b2-0000-7000-8000-00000000e001",
  tgHook: "0193a4b2-0000-7000-8000-00000000e002",
  x: "0193a4b2-0000-7000-8000-00000000e003",
  tiktok: "0193a4b2-0000-7000-8000-00000000e004",
  email: "0193a4b2-0000-7000-8000-00000000e005",
  /** Company "acme": an X account with an OAuth 2.0 user token (Bearer). */
  xBearer: "0193a4b2-0000-7000-8000-00000000e006",
};
const TG_POLL_TOKEN = "111:poll-token";
const TG_HOOK_TOKEN = "222:hook-token";
const TG_SECRET = "hook-secret_42";
const X = { userId: "900000001", consumerKey: "ck-test", consumerSecret: "cs-test", accessToken: "at-test", tokenSecret: "ts-test", dailyLimit: 6 };
const XB = { userId: "900000002", accessToken: "oauth2-user-token", consumerSecret: "cs-acme" };
const TT = { businessId: "biz-777", clientSecret: "tt-client-secret", accessToken: "tt-access-token" };
const FROM = "Shop Support <support@shop.example>";
const LONG = 30_000;

let dir: string;
let apiKey: string;
let configPath: string;
let port: number;
let srv: RunningServer;
let tgPoll: TelegramFake;
let tgHook: TelegramFake;
let xf: XFake;
let xfBearer: XFake;
let acmeKey: string;
let tt: TiktokFake;
let smtp: SmtpPeer;
let inboundSmtpPort: number;
let receiver: ReturnType<typeof Bun.serve>;
const delivered: { type: string; data: any }[] = [];

// ------------------------------------------------------------------ helpers

async function api(method: string, path: string, body?: unknown, key = apiKey) {
  const r = await fetch(`${srv.url}/api/public/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, headers: r.headers, body: (await r.json().catch(() => null)) as any };
}

const hookUrl = (accountId: string) => `${srv.url}/hooks/${accountId}`;

/** Polls `fn` every 25 ms until it returns a value other than undefined/false, or fails after `timeoutMs`. */
async function until<T>(what: string, fn: () => T | undefined | false | null | Promise<T | undefined | false | null>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false && v !== null) return v as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n--- server output ---\n${srv?.output().slice(-4000)}`);
    await Bun.sleep(25);
  }
}

function sql<T = any>(query: string, ...params: (string | number)[]): T[] {
  const db = new Database(join(dir, "data", "switchboard.db"));
  try {
    return db.query(query).all(...params) as T[];
  } finally {
    db.close();
  }
}

const contactIdOf = (channel: string, value: string): string | undefined =>
  sql<{ contact_id: string }>("SELECT contact_id FROM contact_identities WHERE channel = ? AND value = ?", channel, value)[0]?.contact_id;
const countRows = (table: string) => sql<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)[0]!.n;

async function messageIn(accountId: string, providerMessageId: string): Promise<any> {
  return until(
    `inbound ${providerMessageId}`,
    () =>
      sql(
        "SELECT id, conversation_id, contact_id, reply_to_message_id, content FROM messages WHERE channel_account_id = ? AND provider_message_id = ? AND direction = 'inbound'",
        accountId,
        providerMessageId,
      )[0],
  );
}

async function send(body: Record<string, unknown>) {
  const r = await api("POST", "/messages", body);
  return r;
}

/** POST /messages (expects 202) and waits for a final status (sent or failed); returns the full record. */
async function sendAndSettle(body: Record<string, unknown>, want: "sent" | "failed", timeoutMs = 10_000) {
  const r = await send(body);
  expect(r.status).toBe(202);
  const id = r.body.data.id as string;
  return until(
    `message ${id} ${want}`,
    async () => {
      const m = (await api("GET", `/messages/${id}`)).body.data;
      if (m.status === "queued") return undefined;
      if (want === "sent" && m.status === "failed") throw new Error(`message failed: ${JSON.stringify(m.error)}`);
      return m.status === want || (want === "sent" && ["delivered", "read"].includes(m.status)) ? m : undefined;
    },
    timeoutMs,
  );
}

const eventFor = (type: string, messageId: string) =>
  until(`${type} webhook for ${messageId}`, () => delivered.find((e) => e.type === type && e.data?.message?.id === messageId));

async function consentOf(channel: string, value: string): Promise<string | undefined> {
  const id = contactIdOf(channel, value);
  if (!id) return undefined;
  return (await api("GET", `/contacts/${id}`)).body.data.consent?.[channel]?.status;
}

const nowS = () => Math.floor(Date.now() / 1000);
// NB! In a private chat Telegram numbers both directions with one message_id sequence; the fake numbers
// the bot's messages from 1, so the users' messages here use ids the fake never hands out (< 100 or > 900).
const tgText = (userId: number, messageId: number, text: string, username?: string) => ({
  message: {
    message_id: messageId,
    from: { id: userId, is_bot: false, first_name: "User", last_name: String(userId), username },
    chat: { id: userId, type: "private" },
    date: nowS(),
    text,
  },
});

function configToml(): string {
  return `[server]
listen = "127.0.0.1:${port}"
public_url = "http://127.0.0.1:${port}"

[storage]
data_dir = "./data"

[log]
level = "warn"

[[channels]]
id = "${ID.tgPoll}"
company = "default"
channel = "telegram"
provider = "telegram"
name = "Support bot (polling)"
default = true
[channels.settings]
bot_token = "${TG_POLL_TOKEN}"
mode = "polling"
base_url = "${tgPoll.url}"

[[channels]]
id = "${ID.tgHook}"
company = "default"
channel = "telegram"
provider = "telegram"
name = "Sales bot (webhook)"
default = false
[channels.settings]
bot_token = "${TG_HOOK_TOKEN}"
mode = "webhook"
secret_token = "${TG_SECRET}"
base_url = "${tgHook.url}"

[[channels]]
id = "${ID.x}"
company = "default"
channel = "x"
provider = "x"
name = "X DMs"
default = true
[channels.settings]
user_id = "${X.userId}"
consumer_key = "${X.consumerKey}"
consumer_secret = "${X.consumerSecret}"
access_token = "${X.accessToken}"
access_token_secret = "${X.tokenSecret}"
daily_dm_limit = ${X.dailyLimit}
base_url = "${xf.url}"

[[channels]]
id = "${ID.xBearer}"
company = "acme"
channel = "x"
provider = "x"
name = "Acme X DMs (OAuth 2.0)"
default = true
[channels.settings]
user_id = "${XB.userId}"
access_token = "${XB.accessToken}"
consumer_secret = "${XB.consumerSecret}"
base_url = "${xfBearer.url}"

[[channels]]
id = "${ID.tiktok}"
company = "default"
channel = "tiktok"
provider = "tiktok"
name = "TikTok"
default = true
[channels.settings]
business_id = "${TT.businessId}"
access_token = "${TT.accessToken}"
client_secret = "${TT.clientSecret}"
base_url = "${tt.url}"

[[channels]]
id = "${ID.email}"
company = "default"
channel = "email"
provider = "smtp"
name = "Support mailbox"
default = true
[channels.settings]
host = "127.0.0.1"
port = ${smtp.port}
secure = false
from = "${FROM}"
inbound_smtp_listen = "127.0.0.1:${inboundSmtpPort}"
`;
}

beforeAll(async () => {
  dir = tempDir("sb-providers-");
  const init = run(["init", "--dir", dir, "--json"]);
  expect(init.code).toBe(0);
  ({ apiKey, configPath } = JSON.parse(init.stdout));
  expect(run(["companies", "create", "--slug", "acme", "--name", "Acme Ltd", "--config", configPath]).code).toBe(0);
  const key = run(["keys", "create", "--company", "acme", "--name", "e2e", "--json", "--config", configPath]);
  expect(key.code).toBe(0);
  acmeKey = JSON.parse(key.stdout).key;

  tgPoll = TelegramFake.start({ token: TG_POLL_TOKEN });
  tgHook = TelegramFake.start({ token: TG_HOOK_TOKEN });
  xf = XFake.start({ userId: X.userId, oauth1: { consumerSecret: X.consumerSecret, tokenSecret: X.tokenSecret } });
  xfBearer = XFake.start({ userId: XB.userId });
  tt = TiktokFake.start({ accessToken: TT.accessToken });
  smtp = await SmtpPeer.start();
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      delivered.push((await req.json()) as { type: string; data: any });
      return new Response("ok");
    },
  });
  port = await freePort();
  inboundSmtpPort = await freePort();
  writeFileSync(configPath, configToml());
  srv = await serve(configPath, {}, { port });

  const hook = await api("POST", "/webhooks", { url: `http://127.0.0.1:${receiver.port}/events`, events: ["message.*", "contact.*", "conversation.*"] });
  expect(hook.status).toBe(201);
}, LONG);

afterAll(async () => {
  await srv?.stop();
  await Promise.all([tgPoll?.stop(), tgHook?.stop(), xf?.stop(), xfBearer?.stop(), tt?.stop(), smtp?.stop(), receiver?.stop(true)]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// ------------------------------------------------------------------ accounts

test("GET /channels lists every provider account with the webhook URL to register", async () => {
  const r = await api("GET", "/channels");
  expect(r.status).toBe(200);
  const byId = Object.fromEntries(r.body.data.map((a: any) => [a.id, a]));
  for (const [key, id] of Object.entries(ID)) {
    if (key === "xBearer") continue; // another company's account: not listed for this key
    expect(byId[id], key).toMatchObject({ status: "active", webhookUrl: `http://127.0.0.1:${port}/hooks/${id}` });
  }
  expect(byId[ID.tgPoll]).toMatchObject({ channel: "telegram", provider: "telegram", default: true });
  expect(byId[ID.email]).toMatchObject({ channel: "email", provider: "smtp" });
});

// ------------------------------------------------------------------ Telegram

describe("Telegram", () => {
  test(
    "pending @username contact is resolved, and a getUpdates update opens contact + conversation (deep link kept)",
    async () => {
      const pre = await api("POST", "/contacts", { identities: [{ channel: "telegram", value: "@annlee" }], firstName: "Ann" });
      expect(pre.status).toBe(201);
      const preId = pre.body.data.contact.id;

      const update = tgPoll.queueUpdate(tgText(5001, 1, "/start promo42", "annlee"));
      const m = await messageIn(ID.tgPoll, "5001:1");
      expect(m.contact_id).toBe(preId); // @annlee resolved to the user id, no second contact
      expect(contactIdOf("telegram", "5001")).toBe(preId);
      expect(JSON.parse(m.content)).toMatchObject({ text: "/start promo42", referral: { type: "deep_link", payload: "promo42" } });
      const conv = (await api("GET", `/conversations/${m.conversation_id}`)).body.data;
      expect(conv).toMatchObject({ status: "open", channel: "telegram", channelAccountId: ID.tgPoll, contactId: preId });
      await until("message.received webhook", () => delivered.find((e) => e.type === "message.received" && e.data.message.id === m.id));
      // The next getUpdates confirms the update (offset = update_id + 1).
      await until("offset confirmed", () => tgPoll.calls("getUpdates").some((c) => (c.body as any)?.offset === (update.update_id as number) + 1));
    },
    LONG,
  );

  test("the bot writing first is refused: 422 MESSAGING_WINDOW_CLOSED, nothing sent", async () => {
    const before = tgPoll.calls("sendMessage").length;
    const r = await send({ channel: "telegram", to: { handle: "5999" }, type: "text", text: "hello?" });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");
    expect(tgPoll.calls("sendMessage").length).toBe(before);
  });

  test(
    "a reply goes out as sendMessage with the exact body (chat_id, text, reply_parameters)",
    async () => {
      const inbound = await messageIn(ID.tgPoll, "5001:1");
      const m = await sendAndSettle({ channel: "telegram", to: { handle: "5001" }, type: "text", text: "Hello Ann", replyToMessageId: inbound.id }, "sent");
      const call = tgPoll.calls("sendMessage").at(-1)!;
      expect(call.path).toBe(`/bot${TG_POLL_TOKEN}/sendMessage`);
      expect(call.headers["content-type"]).toContain("application/json");
      expect(call.body).toEqual({ chat_id: 5001, text: "Hello Ann", reply_parameters: { message_id: 1, allow_sending_without_reply: true } });
      expect(m.providerMessageId).toMatch(/^5001:\d+$/);
      expect(m.conversationId).toBe(inbound.conversation_id);
      await eventFor("message.sent", m.id);
    },
    LONG,
  );

  test(
    "429 retry_after is honoured: the message is sent after the wait",
    async () => {
      tgPoll.fail("sendMessage", telegramErrors.tooManyRequests(1));
      const m = await sendAndSettle({ channel: "telegram", to: { handle: "5001" }, type: "text", text: "after the flood wait" }, "sent", 15_000);
      const calls = tgPoll.calls("sendMessage").filter((c) => (c.body as any).text === "after the flood wait");
      expect(calls).toHaveLength(2);
      expect(calls[1]!.at.getTime() - calls[0]!.at.getTime()).toBeGreaterThanOrEqual(950);
      expect(delivered.some((e) => e.type === "message.failed" && e.data.message.id === m.id)).toBe(false);
    },
    LONG,
  );

  test(
    "a provider refusal becomes message.failed with a reason (400 chat not found → RECIPIENT_INVALID)",
    async () => {
      tgPoll.fail("sendMessage", telegramErrors.chatNotFound());
      const m = await sendAndSettle({ channel: "telegram", to: { handle: "5001" }, type: "text", text: "lost" }, "failed");
      expect(m.error).toEqual({ code: "400", reason: "RECIPIENT_INVALID", message: "Bad Request: chat not found" });
      const ev = await eventFor("message.failed", m.id);
      expect(ev.data.message.error.reason).toBe("RECIPIENT_INVALID");
    },
    LONG,
  );

  test(
    "403 bot was blocked by the user → message.failed USER_BLOCKED and Telegram consent opted_out",
    async () => {
      tgPoll.queueUpdate(tgText(5002, 1, "hi"));
      await messageIn(ID.tgPoll, "5002:1");
      tgPoll.fail("sendMessage", telegramErrors.blocked());
      const m = await sendAndSettle({ channel: "telegram", to: { handle: "5002" }, type: "text", text: "are you there?" }, "failed");
      expect(m.error.reason).toBe("USER_BLOCKED");
      expect((await eventFor("message.failed", m.id)).data.message.error.reason).toBe("USER_BLOCKED");
      expect(await consentOf("telegram", "5002")).toBe("opted_out");
      const again = await send({ channel: "telegram", to: { handle: "5002" }, type: "text", text: "again" });
      expect(again.status).toBe(422);
      expect(again.body.error.code).toBe("CONTACT_BLOCKED");
    },
    LONG,
  );

  test(
    "a my_chat_member kicked update removes the contact's Telegram consent",
    async () => {
      tgPoll.queueUpdate(tgText(5003, 1, "hi"));
      await messageIn(ID.tgPoll, "5003:1");
      expect(await consentOf("telegram", "5003")).not.toBe("opted_out");
      tgPoll.queueUpdate({
        my_chat_member: {
          chat: { id: 5003, type: "private", first_name: "User" },
          from: { id: 5003, is_bot: false, first_name: "User" },
          date: nowS(),
          old_chat_member: { status: "member", user: { id: 111, is_bot: true, first_name: "Test Bot" } },
          new_chat_member: { status: "kicked", user: { id: 111, is_bot: true, first_name: "Test Bot" }, until_date: 0 },
        },
      });
      await until("consent opted_out", async () => (await consentOf("telegram", "5003")) === "opted_out");
    },
    LONG,
  );

  test(
    "a user who blocked the bot comes back with Start (/start): consent opted_in again, replies go out",
    async () => {
      expect(await consentOf("telegram", "5002")).toBe("opted_out");
      tgPoll.queueUpdate({
        my_chat_member: {
          chat: { id: 5002, type: "private" },
          from: { id: 5002, is_bot: false, first_name: "User" },
          date: nowS(),
          new_chat_member: { status: "member", user: { id: 111, is_bot: true, first_name: "Test Bot" } },
        },
      });
      tgPoll.queueUpdate(tgText(5002, 2, "/start"));
      await messageIn(ID.tgPoll, "5002:2");
      expect(await consentOf("telegram", "5002")).toBe("opted_in");
      await sendAndSettle({ channel: "telegram", to: { handle: "5002" }, type: "text", text: "welcome back" }, "sent");
      expect(tgPoll.calls("sendMessage").at(-1)!.body).toEqual({ chat_id: 5002, text: "welcome back" });
    },
    LONG,
  );

  test(
    "the getUpdates offset survives a restart of the binary: no update lost, none repeated",
    async () => {
      const inboundCount = () =>
        sql<{ n: number }>("SELECT count(*) AS n FROM messages WHERE channel_account_id = ? AND direction = 'inbound'", ID.tgPoll)[0]!.n;
      const before = inboundCount();
      const confirmed = sql<{ value: string }>("SELECT value FROM adapter_state WHERE account_id = ? AND key = 'telegram.update_offset'", ID.tgPoll)[0]!.value;
      expect(Number(confirmed)).toBeGreaterThan(0);

      expect(await srv.stop()).toBe(0);
      const callsBefore = tgPoll.calls("getUpdates").length;
      const whileDown = tgPoll.queueUpdate(tgText(5001, 902, "written while the appliance was down"));
      srv = await serve(configPath, {}, { port });

      await messageIn(ID.tgPoll, "5001:902");
      const firstAfter = tgPoll.calls("getUpdates")[callsBefore]!;
      expect((firstAfter.body as any).offset).toBe(Number(confirmed)); // resumes exactly where it stopped
      const after = tgPoll.queueUpdate(tgText(5001, 903, "after the restart"));
      await messageIn(ID.tgPoll, "5001:903");
      await until(
        "offset past the last update",
        () =>
          sql<{ value: string }>("SELECT value FROM adapter_state WHERE account_id = ? AND key = 'telegram.update_offset'", ID.tgPoll)[0]!.value ===
          String((after.update_id as number) + 1),
      );
      expect(inboundCount()).toBe(before + 2);
      // Nothing handed over twice: every provider message id is stored once.
      const dupes = sql(
        "SELECT provider_message_id, count(*) AS n FROM messages WHERE channel_account_id = ? AND provider_message_id IS NOT NULL GROUP BY provider_message_id HAVING n > 1",
        ID.tgPoll,
      );
      expect(dupes).toEqual([]);
      expect(whileDown.update_id).toBeLessThan(after.update_id as number);
    },
    LONG,
  );

  describe("webhook mode", () => {
    test("start-up registers setWebhook with the GET /channels URL, secret_token and allowed_updates", async () => {
      const channels = (await api("GET", "/channels")).body.data;
      const acc = channels.find((a: any) => a.id === ID.tgHook);
      expect(tgHook.webhook).toEqual({ url: acc.webhookUrl, secret_token: TG_SECRET, allowed_updates: ["message", "callback_query", "my_chat_member"] });
      expect(tgHook.calls("getUpdates")).toHaveLength(0);
    });

    test("an update with the right secret header opens contact + conversation", async () => {
      const res = await tgHook.deliverWebhook(tgText(6001, 7, "hi via webhook"));
      expect(res.status).toBe(200);
      const m = await messageIn(ID.tgHook, "6001:7");
      expect(m.contact_id).toBe(contactIdOf("telegram", "6001")!);
      const conv = (await api("GET", `/conversations/${m.conversation_id}`)).body.data;
      expect(conv).toMatchObject({ status: "open", channelAccountId: ID.tgHook });
    });

    test("a wrong or missing secret header is rejected (401) and stores nothing", async () => {
      const [messages, contacts] = [countRows("messages"), countRows("contacts")];
      for (const secretToken of ["wrong-secret", undefined]) {
        const res = await TelegramFake.pushWebhook({ url: hookUrl(ID.tgHook), update: { update_id: 1, ...tgText(6002, 1, "forged") }, secretToken });
        expect(res.status).toBe(401);
      }
      await Bun.sleep(100);
      expect([countRows("messages"), countRows("contacts")]).toEqual([messages, contacts]);
      expect(contactIdOf("telegram", "6002")).toBeUndefined();
    });
  });
});

// ------------------------------------------------------------------ X

describe("X", () => {
  test("CRC GET answers response_token = sha256=<base64 HMAC(consumer_secret, crc_token)>", async () => {
    const crc = await XFake.crc({ url: hookUrl(ID.x), consumerSecret: X.consumerSecret });
    expect(crc.status).toBe(200);
    expect(crc.body).toEqual({ response_token: crc.expected });
  });

  test("a signed Account Activity DM opens contact + conversation", async () => {
    const res = await XFake.pushWebhook({
      url: hookUrl(ID.x),
      consumerSecret: X.consumerSecret,
      payload: XFake.dmPayload({ forUserId: X.userId, senderId: "7001", text: "hi X", eventId: "1500000000000000001" }),
    });
    expect(res.status).toBe(200);
    const m = await messageIn(ID.x, "1500000000000000001");
    expect(m.contact_id).toBe(contactIdOf("x", "7001")!);
    expect((await api("GET", `/contacts/${m.contact_id}`)).body.data).toMatchObject({ firstName: "Ann", lastName: "Lee" });
    expect((await api("GET", `/conversations/${m.conversation_id}`)).body.data).toMatchObject({ status: "open", channel: "x" });
  });

  test("a redelivered event is stored once", async () => {
    const payload = XFake.dmPayload({ forUserId: X.userId, senderId: "7001", text: "hi X", eventId: "1500000000000000001" });
    expect((await XFake.pushWebhook({ url: hookUrl(ID.x), consumerSecret: X.consumerSecret, payload })).status).toBe(200);
    await Bun.sleep(100);
    expect(sql("SELECT id FROM messages WHERE channel_account_id = ? AND provider_message_id = ?", ID.x, "1500000000000000001")).toHaveLength(1);
  });

  test("a bad or missing signature is rejected (401) and stores nothing", async () => {
    const [messages, contacts] = [countRows("messages"), countRows("contacts")];
    const payload = XFake.dmPayload({ forUserId: X.userId, senderId: "7002", text: "forged", eventId: "1500000000000000002" });
    for (const signature of ["sha256=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", null]) {
      expect((await XFake.pushWebhook({ url: hookUrl(ID.x), consumerSecret: X.consumerSecret, payload, signature })).status).toBe(401);
    }
    // Signed with another secret.
    expect((await XFake.pushWebhook({ url: hookUrl(ID.x), consumerSecret: "not-ours", payload })).status).toBe(401);
    await Bun.sleep(100);
    expect([countRows("messages"), countRows("contacts")]).toEqual([messages, contacts]);
    expect(contactIdOf("x", "7002")).toBeUndefined();
  });

  test(
    "a stored image goes out through X's chunked upload and is attached to the DM; a PDF is refused at POST /messages",
    async () => {
      const png = new Uint8Array(70_000).map((_, i) => i % 256);
      png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]); // the PNG signature: POST /media sniffs the type
      const form = new FormData();
      form.append("file", new File([png], "label.png", { type: "image/png" }));
      const up = await fetch(`${srv.url}/api/public/v1/media`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: form });
      expect(up.status).toBe(201);
      const mediaId = ((await up.json()) as { data: { id: string } }).data.id;
      const before = xf.requests.length;
      const m = await sendAndSettle({ channel: "x", to: { handle: "7001" }, type: "media", media: { mediaId, caption: "Your label" } }, "sent");
      const reqs = xf.requests.slice(before);
      expect(reqs.map((q) => q.path.replace(/\d{6,}/, ":id"))).toEqual([
        "/2/media/upload/initialize",
        "/2/media/upload/:id/append",
        "/2/media/upload/:id/finalize",
        "/2/dm_conversations/with/7001/messages",
      ]);
      const xMediaId = (reqs[3]!.body as { attachments: { media_id: string }[] }).attachments[0]!.media_id;
      expect(reqs[3]!.body).toEqual({ text: "Your label", attachments: [{ media_id: xMediaId }] });
      expect(Buffer.from(xf.uploaded(xMediaId)!.bytes).equals(Buffer.from(png))).toBe(true);
      await eventFor("message.sent", m.id);

      const pdf = new FormData();
      pdf.append("file", new File([new TextEncoder().encode("%PDF-1.4\n%%EOF\n")], "x.pdf", { type: "application/pdf" }));
      const pdfId = (
        (await (await fetch(`${srv.url}/api/public/v1/media`, { method: "POST", headers: { authorization: `Bearer ${apiKey}` }, body: pdf })).json()) as {
          data: { id: string };
        }
      ).data.id;
      const refused = await send({ channel: "x", to: { handle: "7001" }, type: "media", media: { mediaId: pdfId } });
      expect(refused.status).toBe(422);
      expect(refused.body.error.details[0].pointer).toBe("/media/mediaId");
    },
    LONG,
  );

  test("a DM without a prior conversation is refused: 422 MESSAGING_WINDOW_CLOSED", async () => {
    const r = await send({ channel: "x", to: { handle: "7999" }, type: "text", text: "cold DM" });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");
  });

  test(
    "a reply goes out as POST /2/dm_conversations/with/:id/messages, OAuth 1.0a signed (verified by the fake)",
    async () => {
      const before = xf.requests.length;
      const m = await sendAndSettle({ channel: "x", to: { handle: "7001" }, type: "text", text: "Hello from the shop" }, "sent");
      const reqs = xf.requests.slice(before);
      expect(reqs).toHaveLength(1);
      const req = reqs[0]!;
      expect(req.method).toBe("POST");
      expect(req.path).toBe("/2/dm_conversations/with/7001/messages");
      expect(req.body).toEqual({ text: "Hello from the shop" });
      const oauth = parseOAuthHeader(req.headers.authorization!);
      expect(oauth).toMatchObject({ oauth_consumer_key: X.consumerKey, oauth_token: X.accessToken, oauth_signature_method: "HMAC-SHA1", oauth_version: "1.0" });
      expect(m.providerMessageId).toMatch(/^\d+$/);
      await eventFor("message.sent", m.id);

      // A read event (direct_message_mark_read_events) marks it read.
      const read = {
        for_user_id: X.userId,
        direct_message_mark_read_events: [
          { created_timestamp: String(Date.now()), sender_id: "7001", target: { recipient_id: X.userId }, last_read_event_id: m.providerMessageId },
        ],
      };
      expect((await XFake.pushWebhook({ url: hookUrl(ID.x), consumerSecret: X.consumerSecret, payload: read })).status).toBe(200);
      await eventFor("message.read", m.id);
      expect((await api("GET", `/messages/${m.id}`)).body.data.status).toBe("read");
    },
    LONG,
  );

  test(
    "an OAuth 2.0 account (another company) sends with Authorization: Bearer <user token>",
    async () => {
      const res = await XFake.pushWebhook({
        url: hookUrl(ID.xBearer),
        consumerSecret: XB.consumerSecret,
        payload: XFake.dmPayload({ forUserId: XB.userId, senderId: "8001", text: "hi Acme", eventId: "1600000000000000001" }),
      });
      expect(res.status).toBe(200);
      await messageIn(ID.xBearer, "1600000000000000001");
      const r = await api("POST", "/messages", { channel: "x", to: { handle: "8001" }, type: "text", text: "Hi from Acme" }, acmeKey);
      expect(r.status).toBe(202);
      await until("sent", async () => (await api("GET", `/messages/${r.body.data.id}`, undefined, acmeKey)).body.data.status === "sent");
      expect(xfBearer.requests).toHaveLength(1);
      expect(xfBearer.requests[0]!).toMatchObject({ method: "POST", path: "/2/dm_conversations/with/8001/messages", body: { text: "Hi from Acme" } });
      expect(xfBearer.requests[0]!.headers.authorization).toBe(`Bearer ${XB.accessToken}`);
      // The other company's key does not see it.
      expect((await api("GET", `/messages/${r.body.data.id}`)).status).toBe(404);
    },
    LONG,
  );

  test(
    "403 recipient does not accept DMs → message.failed USER_BLOCKED, X consent opted_out",
    async () => {
      await XFake.pushWebhook({
        url: hookUrl(ID.x),
        consumerSecret: X.consumerSecret,
        payload: XFake.dmPayload({ forUserId: X.userId, senderId: "7003", text: "hi", eventId: "1500000000000000003" }),
      });
      await messageIn(ID.x, "1500000000000000003");
      xf.fail(xErrors.notAcceptingDms());
      const m = await sendAndSettle({ channel: "x", to: { handle: "7003" }, type: "text", text: "blocked?" }, "failed");
      expect(m.error).toMatchObject({ reason: "USER_BLOCKED", code: "403" });
      expect((await eventFor("message.failed", m.id)).data.message.error.reason).toBe("USER_BLOCKED");
      expect(await consentOf("x", "7003")).toBe("opted_out");
    },
    LONG,
  );

  test(
    "provider 429 with x-rate-limit-* headers: retried after the reset, then sent",
    async () => {
      const before = xf.requests.length;
      xf.fail(xErrors.rateLimited({ resetEpochS: nowS() + 2 }));
      const m = await sendAndSettle({ channel: "x", to: { handle: "7001" }, type: "text", text: "after the rate limit" }, "sent", 15_000);
      const reqs = xf.requests.slice(before);
      expect(reqs).toHaveLength(2);
      expect(reqs[1]!.at.getTime() - reqs[0]!.at.getTime()).toBeGreaterThanOrEqual(900);
      expect(delivered.some((e) => e.type === "message.failed" && e.data.message.id === m.id)).toBe(false);
    },
    LONG,
  );

  test(
    "the daily DM limit (daily_dm_limit) from our own sends: 429 RATE_LIMITED with Retry-After",
    async () => {
      const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
      const used = sql<{ n: number }>(
        "SELECT count(*) AS n FROM messages WHERE channel_account_id = ? AND direction = 'outbound' AND created_at >= ?",
        ID.x,
        today,
      )[0]!.n;
      expect(used).toBeLessThan(X.dailyLimit);
      for (let i = used; i < X.dailyLimit; i++) expect((await send({ channel: "x", to: { handle: "7001" }, type: "text", text: `dm ${i}` })).status).toBe(202);
      const r = await send({ channel: "x", to: { handle: "7001" }, type: "text", text: "one too many" });
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe("RATE_LIMITED");
      const retryAfter = Number(r.headers.get("retry-after"));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(86_400);
    },
    LONG,
  );
});

// ------------------------------------------------------------------ TikTok

describe("TikTok", () => {
  const push = (body: unknown, extra: { timestamp?: number; signature?: string | null; clientSecret?: string } = {}) =>
    TiktokFake.pushWebhook({
      url: hookUrl(ID.tiktok),
      body,
      clientSecret: extra.clientSecret ?? TT.clientSecret,
      timestamp: extra.timestamp,
      signature: extra.signature,
    });

  test("a signed im_receive_msg opens contact + conversation and keeps the conversation_id", async () => {
    const res = await push(
      TiktokFake.messageWebhookBody({ businessId: TT.businessId, userId: "tt-user-1", conversationId: "conv-abc", text: "hi tiktok", messageId: "tt-m-1" }),
    );
    expect(res.status).toBe(200);
    const m = await messageIn(ID.tiktok, "tt-m-1");
    expect(m.contact_id).toBe(contactIdOf("tiktok", "tt-user-1")!);
    expect((await api("GET", `/conversations/${m.conversation_id}`)).body.data).toMatchObject({ status: "open", channel: "tiktok" });
    expect(sql("SELECT conversation_ref FROM contact_channel_state WHERE contact_id = ? AND channel_account_id = ?", m.contact_id, ID.tiktok)[0]).toEqual({
      conversation_ref: "conv-abc",
    });
  });

  test("stale, wrong or missing Tiktok-Signature is rejected (401) and stores nothing", async () => {
    const [messages, contacts] = [countRows("messages"), countRows("contacts")];
    const body = TiktokFake.messageWebhookBody({
      businessId: TT.businessId,
      userId: "tt-forger",
      conversationId: "conv-f",
      text: "forged",
      messageId: "tt-f-1",
    });
    expect((await push(body, { timestamp: nowS() - 600 })).status).toBe(401); // correctly signed, 10 minutes old
    expect((await push(body, { clientSecret: "not-ours" })).status).toBe(401);
    expect((await push(body, { signature: null })).status).toBe(401);
    await Bun.sleep(100);
    expect([countRows("messages"), countRows("contacts")]).toEqual([messages, contacts]);
    expect(contactIdOf("tiktok", "tt-forger")).toBeUndefined();
  });

  test("no conversation, or the 48 h window closed at the provider's timestamp: 422 MESSAGING_WINDOW_CLOSED", async () => {
    const cold = await send({ channel: "tiktok", to: { handle: "tt-nobody" }, type: "text", text: "hello" });
    expect(cold.status).toBe(422);
    expect(cold.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");

    await push(
      TiktokFake.messageWebhookBody({
        businessId: TT.businessId,
        userId: "tt-user-old",
        conversationId: "conv-old",
        text: "long ago",
        messageId: "tt-m-old",
        timestampMs: Date.now() - 49 * 3_600_000,
      }),
    );
    await messageIn(ID.tiktok, "tt-m-old");
    const late = await send({ channel: "tiktok", to: { handle: "tt-user-old" }, type: "text", text: "too late" });
    expect(late.status).toBe(422);
    expect(late.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");
  });

  test(
    "a reply goes to the stored conversation_id with Access-Token",
    async () => {
      const before = tt.requests.length;
      const m = await sendAndSettle({ channel: "tiktok", to: { handle: "tt-user-1" }, type: "text", text: "Hi from the shop" }, "sent");
      const reqs = tt.requests.slice(before);
      expect(reqs).toHaveLength(1);
      expect(reqs[0]!.path).toBe("/open_api/v1.3/business/message/send/");
      expect(reqs[0]!.headers["access-token"]).toBe(TT.accessToken);
      expect(reqs[0]!.headers.authorization).toBeUndefined();
      expect(reqs[0]!.body).toEqual({
        business_id: TT.businessId,
        recipient_type: "CONVERSATION",
        recipient: "conv-abc",
        message_type: "TEXT",
        text: { body: "Hi from the shop" },
      });
      expect(m.providerMessageId).toMatch(/^msg-\d+$/);

      // im_mark_read_msg from the user marks it read.
      await Bun.sleep(5);
      const read = TiktokFake.messageWebhookBody({
        businessId: TT.businessId,
        userId: "tt-user-1",
        conversationId: "conv-abc",
        event: "im_mark_read_msg",
        messageId: "tt-read-1",
      });
      expect((await push(read)).status).toBe(200);
      await eventFor("message.read", m.id);
    },
    LONG,
  );

  test(
    "a non-zero code becomes message.failed with the provider code; a system error is retried",
    async () => {
      tt.fail("send", tiktokErrors.windowClosed());
      const failed = await sendAndSettle({ channel: "tiktok", to: { handle: "tt-user-1" }, type: "text", text: "refused" }, "failed");
      expect(failed.error).toMatchObject({ reason: "PROVIDER_REJECTED", code: "40051" });
      expect((await eventFor("message.failed", failed.id)).data.message.error).toMatchObject({ reason: "PROVIDER_REJECTED", code: "40051" });

      tt.fail("send", tiktokErrors.systemError());
      await sendAndSettle({ channel: "tiktok", to: { handle: "tt-user-1" }, type: "text", text: "second try works" }, "sent", 15_000);
      expect(tt.requests.filter((r) => (r.body as any)?.text?.body === "second try works")).toHaveLength(2);
    },
    LONG,
  );
});

// ------------------------------------------------------------------ E-mail

describe("E-mail (SMTP)", () => {
  let firstId: string;
  let firstMessageId: string;

  test(
    "an e-mail goes out over SMTP with our own Message-ID",
    async () => {
      const before = smtp.messages.length;
      const m = await sendAndSettle(
        {
          channel: "email",
          to: { email: "Alice@Example.com" },
          type: "email",
          email: { subject: "Your order A1", text: "It shipped.", html: "<p>It shipped.</p>" },
        },
        "sent",
      );
      const [mail] = (await smtp.waitForMessages(before + 1)).slice(before);
      expect(mail!.envelope).toEqual({ from: "support@shop.example", to: ["alice@example.com"] });
      expect(mail!.parsed.messageId).toBe(`<${m.id}@shop.example>`);
      expect(m.providerMessageId).toBe(mail!.parsed.messageId);
      expect(mail!.parsed.subject).toBe("Your order A1");
      expect(mail!.parsed.text?.trim()).toBe("It shipped.");
      expect(mail!.parsed.from?.text).toBe('"Shop Support" <support@shop.example>');
      expect(mail!.parsed.inReplyTo).toBeUndefined();
      firstId = m.id;
      firstMessageId = m.providerMessageId;
    },
    LONG,
  );

  test(
    "a reply to our Message-ID (inbound SMTP) threads into the same conversation; our answer carries In-Reply-To/References",
    async () => {
      await SmtpPeer.deliver({
        port: inboundSmtpPort,
        mail: {
          from: "Alice <alice@example.com>",
          to: "support@shop.example",
          subject: "Re: Your order A1",
          text: "Thanks!",
          messageId: "<reply-1@example.com>",
          inReplyTo: firstMessageId,
          references: [firstMessageId],
        },
      });
      const inbound = await messageIn(ID.email, "<reply-1@example.com>");
      const first = (await api("GET", `/messages/${firstId}`)).body.data;
      expect(inbound.conversation_id).toBe(first.conversationId);
      expect(inbound.reply_to_message_id).toBe(firstId);
      const content = JSON.parse(inbound.content);
      expect(content.email.subject).toBe("Re: Your order A1");
      expect(content.email.text.trim()).toBe("Thanks!");

      const before = smtp.messages.length;
      const answer = await sendAndSettle(
        {
          channel: "email",
          to: { email: "alice@example.com" },
          type: "email",
          email: { subject: "Re: Your order A1", text: "You're welcome." },
          replyToMessageId: inbound.id,
        },
        "sent",
      );
      expect(answer.conversationId).toBe(first.conversationId);
      const [mail] = (await smtp.waitForMessages(before + 1)).slice(before);
      expect(mail!.parsed.inReplyTo).toBe("<reply-1@example.com>");
      // References: the whole thread, oldest first (our first mail, then the customer's reply).
      expect(mail!.parsed.references).toEqual([firstMessageId, "<reply-1@example.com>"]);
    },
    LONG,
  );

  test(
    "550 → message.failed RECIPIENT_INVALID; 451 is retried and then delivered",
    async () => {
      smtp.rejectRecipient("gone@example.com", 550);
      const failed = await sendAndSettle({ channel: "email", to: { email: "gone@example.com" }, type: "email", email: { subject: "x", text: "x" } }, "failed");
      expect(failed.error).toMatchObject({ reason: "RECIPIENT_INVALID", code: "550" });
      expect((await eventFor("message.failed", failed.id)).data.message.error.reason).toBe("RECIPIENT_INVALID");

      smtp.rejectRecipient("later@example.com", 451);
      const r = await send({ channel: "email", to: { email: "later@example.com" }, type: "email", email: { subject: "retry me", text: "x" } });
      expect(r.status).toBe(202);
      const id = r.body.data.id;
      await until("first attempt refused", () =>
        sql<{ last_error: string | null }>(
          "SELECT last_error FROM jobs WHERE type = 'message.dispatch' AND payload LIKE ?",
          `%${id}%`,
        )[0]?.last_error?.includes("451"),
      );
      smtp.clearRejections();
      await until("sent after retry", async () => (await api("GET", `/messages/${id}`)).body.data.status === "sent", 15_000);
      expect(smtp.messages.some((mm) => mm.parsed.subject === "retry me")).toBe(true);
    },
    LONG,
  );
});
