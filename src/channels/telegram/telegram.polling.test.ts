import { afterAll, beforeEach, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { TelegramFake, telegramErrors } from "../../../test/fakes/telegram.fake";
import type { InboundEvent } from "../channel.types";
import { createTelegramAdapter } from "./telegram.adapter";
import { TELEGRAM_OFFSET_KEY } from "./telegram.polling";

const fake = TelegramFake.start({ token: "42:SECRET" });
afterAll(() => fake.stop());
beforeEach(() => {
  fake.requests.length = 0;
  // NB! An update an earlier test's poller took but never confirmed (it stopped first) would reach this one.
  fake.clearUpdates();
});

const textUpdate = (n: number) => ({
  message: { message_id: n, from: { id: 1001, first_name: "Ann" }, chat: { id: 1001, type: "private" }, date: 1700000000 + n, text: `m${n}` },
});

async function until(cond: () => boolean, ms = 5000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await Bun.sleep(10);
  }
}

function texts(batches: InboundEvent[][]): string[] {
  return batches.flat().map((e) => (e.kind === "message" && e.content.type === "text" ? e.content.text : "?"));
}

test("polling hands updates over, persists the offset, and resumes after stop/start without repeats", async () => {
  const state = new Map<string, string>();
  const t1 = createTestContext({ provider: "telegram", channel: "telegram", settings: { bot_token: "42:SECRET", base_url: fake.url }, state });
  const a1 = createTelegramAdapter(t1.ctx);
  fake.queueUpdate(textUpdate(1));
  const second = fake.queueUpdate(textUpdate(2));
  await a1.startPolling!();
  await until(() => t1.inbound.length === 2);
  expect(texts(t1.inbound)).toEqual(["m1", "m2"]);
  expect(state.get(TELEGRAM_OFFSET_KEY)).toBe(String((second.update_id as number) + 1));

  // A held long poll is answered as soon as an update arrives.
  fake.queueUpdate(textUpdate(3));
  await until(() => t1.inbound.length === 3);

  const stopStarted = Date.now();
  await a1.stop!();
  expect(Date.now() - stopStarted).toBeLessThan(1000); // stop() aborts the held getUpdates

  // While stopped, one more arrives; a new adapter on the same state gets only that one.
  fake.queueUpdate(textUpdate(4));
  const t2 = createTestContext({ provider: "telegram", channel: "telegram", settings: { bot_token: "42:SECRET", base_url: fake.url }, state });
  const a2 = createTelegramAdapter(t2.ctx);
  await a2.startPolling!();
  await until(() => t2.inbound.length === 1);
  await Bun.sleep(50);
  await a2.stop!();
  expect(texts(t2.inbound)).toEqual(["m4"]);

  const polls = fake.calls("getUpdates");
  // A fresh state asks without offset; every later call confirms what was handed over.
  expect(polls[0].body).toEqual({ timeout: 25, allowed_updates: ["message", "callback_query", "my_chat_member"] });
  expect(polls[1].body).toEqual({ timeout: 25, allowed_updates: ["message", "callback_query", "my_chat_member"], offset: (second.update_id as number) + 1 });
});

test("a failing onInbound does not advance the offset; the update comes again", async () => {
  const state = new Map<string, string>();
  let failOnce = true;
  const t = createTestContext({
    provider: "telegram",
    channel: "telegram",
    settings: { bot_token: "42:SECRET", base_url: fake.url },
    state,
    onInbound: async () => {
      if (failOnce) {
        failOnce = false;
        throw new Error("database is locked");
      }
    },
  });
  const a = createTelegramAdapter(t.ctx);
  const u = fake.queueUpdate(textUpdate(5));
  await a.startPolling!();
  await until(() => t.inbound.length === 2, 8000);
  await a.stop!();
  expect(texts(t.inbound)).toEqual(["m5", "m5"]);
  expect(state.get(TELEGRAM_OFFSET_KEY)).toBe(String((u.update_id as number) + 1));
});

test("updates without events (edited messages) still advance the offset", async () => {
  const state = new Map<string, string>();
  const t = createTestContext({ provider: "telegram", channel: "telegram", settings: { bot_token: "42:SECRET", base_url: fake.url }, state });
  const a = createTelegramAdapter(t.ctx);
  const u = fake.queueUpdate({ edited_message: { message_id: 1, chat: { id: 1, type: "private" }, date: 1, text: "x" } });
  await a.startPolling!();
  await until(() => state.get(TELEGRAM_OFFSET_KEY) === String((u.update_id as number) + 1));
  await a.stop!();
  expect(t.inbound).toEqual([]);
});

test("429 on getUpdates waits retry_after; 409 (webhook active) deletes the webhook", async () => {
  const state = new Map<string, string>();
  const t = createTestContext({ provider: "telegram", channel: "telegram", settings: { bot_token: "42:SECRET", base_url: fake.url }, state });
  const a = createTelegramAdapter(t.ctx);
  fake.fail("getUpdates", telegramErrors.conflictWebhookActive());
  fake.fail("getUpdates", telegramErrors.tooManyRequests(1));
  fake.queueUpdate(textUpdate(6));
  const started = Date.now();
  await a.startPolling!();
  await until(() => t.inbound.length === 1, 8000);
  await a.stop!();
  expect(fake.calls("deleteWebhook")).toHaveLength(1);
  expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  expect(t.logs.some((l) => l.m === "telegram: getUpdates failed")).toBe(true);
});
