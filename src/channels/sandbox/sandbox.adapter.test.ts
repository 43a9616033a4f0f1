/** The sandbox adapter: durable delivered/read reports, and the documented failing recipients per channel. */
import { expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { createSandboxAdapter, SANDBOX_TEST_NUMBERS } from "./sandbox.adapter";

const NOW = new Date("2026-06-01T12:00:00.000Z");
const send = (to: string, settings: Record<string, unknown> = { sent_after_ms: 0 }) => {
  const t = createTestContext({ provider: "sandbox", channel: "whatsapp", settings, now: NOW });
  const adapter = createSandboxAdapter(t.ctx);
  return adapter.send({ messageId: "m1", to: { value: to }, content: { type: "text", text: "hi" } }).then((result) => ({ result, t }));
};

test("a send returns its delivered then read reports, at the configured delays, to be stored with it", async () => {
  const { result, t } = await send("+14155550100", { sent_after_ms: 0, delivered_after_ms: 200, read_after_ms: 500 });
  const at = (ms: number) => new Date(NOW.getTime() + ms);
  expect(result).toEqual({
    ok: true,
    providerMessageId: "sandbox.m1",
    reports: [
      { at: at(200), events: [{ kind: "status", providerMessageId: "sandbox.m1", status: "delivered", timestamp: at(200) }] },
      { at: at(700), events: [{ kind: "status", providerMessageId: "sandbox.m1", status: "read", timestamp: at(700) }] },
    ],
  });
  expect(t.inbound).toEqual([]); // nothing reported in memory
});

test.each([
  ["blocked_ann", "USER_BLOCKED"],
  ["@fail_bob", "PROVIDER_REJECTED"],
  [SANDBOX_TEST_NUMBERS.blocked, "USER_BLOCKED"],
  [SANDBOX_TEST_NUMBERS.fail, "PROVIDER_REJECTED"],
])("%s fails with %s and reports nothing later", async (to, reason) => {
  const { result } = await send(to);
  expect(result).toMatchObject({ ok: false, retry: false, reason });
  expect("reports" in result).toBe(false);
});

test.each([["slow_carl"], [SANDBOX_TEST_NUMBERS.slow]])("%s stays sent for a minute", async (to) => {
  const { result } = await send(to, { sent_after_ms: 0, delivered_after_ms: 200, read_after_ms: 0 });
  expect(result.ok && result.reports![0]!.at).toEqual(new Date(NOW.getTime() + 60_000));
});
