/**
 * Interactive messages end to end with the real adapters against the provider fakes (DESIGN §16): the contact
 * writes in through the provider's signed webhook, POST /messages sends buttons or a list, the dispatch posts
 * them to the fake, and the provider's tap payload comes back as message.received with `inReplyTo` = our id.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GraphFake, whatsappPayloads } from "../../../test/fakes/graph.fake";
import { TelegramFake } from "../../../test/fakes/telegram.fake";
import { eventsOf } from "../../../test/helpers/messaging";
import { createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";

const ID = { wa: "0193a4b2-0000-7000-8000-00000000f0a1", tg: "0193a4b2-0000-7000-8000-00000000f0a6" };
const APP_SECRET = "wa-app-secret";
const TG_SECRET = "tg-secret_1";
const TOKEN = "EAAG-test-token";

let app: TestApp;
let graph: GraphFake;
let telegram: TelegramFake;
let base: string;

beforeAll(async () => {
  graph = new GraphFake({ tokens: [TOKEN] });
  telegram = TelegramFake.start({ token: "42:SECRET" });
  app = await createTestApp({
    config: {
      channels: [
        ...sandboxChannels().filter((c) => c.channel !== "whatsapp" && c.channel !== "telegram"),
        {
          id: ID.wa,
          channel: "whatsapp",
          provider: "whatsapp-cloud",
          name: "WA",
          default: true,
          settings: { phone_number_id: "PNID1", access_token: TOKEN, app_secret: APP_SECRET, verify_token: "v", base_url: graph.url },
        },
        {
          id: ID.tg,
          channel: "telegram",
          provider: "telegram",
          name: "TG",
          default: true,
          settings: { bot_token: "42:SECRET", mode: "webhook", secret_token: TG_SECRET, base_url: telegram.url },
        },
      ],
    },
  });
  app.app.listen({ hostname: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${app.app.server!.port}`;
  telegram.webhook = { url: `${base}/hooks/${ID.tg}`, secret_token: TG_SECRET };
});
afterAll(async () => {
  await app.app.stop(true);
  await app.close();
  await graph.stop();
  await telegram.stop();
});

/** The provider id the dispatch stored (its `sent` commits just after the provider answered). */
async function providerIdOf(id: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    await app.deps.queue.drain();
    const m = (await app.request("GET", `/messages/${id}`)).body.data;
    if (m.providerMessageId) return m.providerMessageId;
    await Bun.sleep(20);
  }
  throw new Error(`message ${id} was not sent`);
}
const lastReceived = () => eventsOf(app, "message.received").at(-1)!.data.message;

describe("whatsapp cloud", () => {
  test("buttons sent as interactive/button; the button_reply tap names our message", async () => {
    const wrote = await graph.pushWebhook({
      url: `${base}/hooks/${ID.wa}`,
      appSecret: APP_SECRET,
      payload: whatsappPayloads.text({ phoneNumberId: "PNID1", from: "14155550101", text: "hi" }),
    });
    expect(wrote.status).toBe(200);
    const sent = await app.request("POST", "/messages", {
      body: {
        channel: "whatsapp",
        to: { phone: "+14155550101" },
        type: "interactive",
        interactive: { kind: "buttons", body: { text: "Keep it?" }, buttons: [{ id: "keep", title: "Keep it" }] },
      },
    });
    expect(sent.status).toBe(202);
    await app.deps.queue.drain();
    const request = graph.requestsTo("/PNID1/messages").at(-1)!;
    expect((request.body as { interactive: unknown }).interactive).toEqual({
      type: "button",
      body: { text: "Keep it?" },
      action: { buttons: [{ type: "reply", reply: { id: "keep", title: "Keep it" } }] },
    });
    const wamid = await providerIdOf(sent.body.data.id);
    expect(wamid).toMatch(/^wamid\./);

    await graph.pushWebhook({
      url: `${base}/hooks/${ID.wa}`,
      appSecret: APP_SECRET,
      payload: whatsappPayloads.tap({
        phoneNumberId: "PNID1",
        from: "14155550101",
        contextId: wamid,
        kind: "button_reply",
        reply: { id: "keep", title: "Keep it" },
      }),
    });
    expect(lastReceived()).toMatchObject({
      type: "interactive",
      content: { interactive: { replyId: "keep", replyTitle: "Keep it", inReplyTo: sent.body.data.id } },
      replyToMessageId: sent.body.data.id,
    });
  });
});

describe("telegram", () => {
  test("a list sent as an inline keyboard; the callback_query names our message and is answered", async () => {
    const wrote = await telegram.deliverWebhook({
      // (An id the fake's own numbering of sent messages does not reach: in one chat they share one sequence.)
      message: {
        message_id: 9000,
        from: { id: 1001, first_name: "Ann" },
        chat: { id: 1001, type: "private" },
        date: Math.floor(app.clock.now().getTime() / 1000),
        text: "hi",
      },
    });
    expect(wrote.status).toBe(200);
    const sent = await app.request("POST", "/messages", {
      body: {
        channel: "telegram",
        to: { handle: "1001" },
        type: "interactive",
        interactive: { kind: "list", body: { text: "Pick a slot" }, list: { button: "Slots", sections: [{ rows: [{ id: "am", title: "Morning" }] }] } },
      },
    });
    expect(sent.status).toBe(202);
    await app.deps.queue.drain();
    const request = telegram.calls("sendMessage").at(-1)!;
    expect(request.body).toEqual({ chat_id: 1001, text: "Pick a slot", reply_markup: { inline_keyboard: [[{ text: "Morning", callback_data: "am" }]] } });
    const providerId = await providerIdOf(sent.body.data.id);

    const update = telegram.callbackQuery({
      from: { id: 1001, first_name: "Ann" },
      message: {
        message_id: Number(providerId.split(":")[1]),
        chat: { id: 1001, type: "private" },
        date: 1,
        text: "Pick a slot",
        reply_markup: (request.body as { reply_markup: unknown }).reply_markup,
      },
      data: "am",
    });
    expect((await telegram.deliverWebhook(update)).status).toBe(200);
    expect(lastReceived()).toMatchObject({
      type: "interactive",
      content: { interactive: { replyId: "am", replyTitle: "Morning", inReplyTo: sent.body.data.id } },
    });
    expect(telegram.calls("answerCallbackQuery").at(-1)!.body).toEqual({ callback_query_id: (update.callback_query as { id: string }).id });
  });
});
