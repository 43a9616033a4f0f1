/** Inbound consent keywords: Telegram's "/start" (Start button, deep links) counts as "start"; other bot commands do not. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { inbound } from "../../../test/helpers/messaging";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
});
afterAll(() => app.close());

async function consent(handle: string): Promise<string> {
  const list = (await app.request("GET", `/contacts?q=${handle}`)).body.data;
  return list[0].consent.telegram.status;
}

test.each([["/start"], ["/start promo42"], ["/START@shop_bot"], ["/start@shop_bot ref_7"]])("%p after STOP opts the contact in again", async (text) => {
  const handle = `tg${Math.random().toString().slice(2, 10)}`;
  await inbound(app, "telegram", { handle }, "stop");
  expect(await consent(handle)).toBe("opted_out");
  await inbound(app, "telegram", { handle }, text);
  expect(await consent(handle)).toBe("opted_in");
});

test.each([["/cancel"], ["/start is what I pressed, now what?"], ["please /start"]])("%p does not change consent", async (text) => {
  const handle = `tg${Math.random().toString().slice(2, 10)}`;
  await inbound(app, "telegram", { handle }, "stop");
  await inbound(app, "telegram", { handle }, text);
  expect(await consent(handle)).toBe("opted_out");
});
