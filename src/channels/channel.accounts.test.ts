import { describe, expect, test } from "bun:test";
import { parseConfig } from "../config/config.load";
import { ConfigError } from "../config/config.load";
import { silentLogger } from "../platform/logger";
import { createChannelRuntime, validateChannelAccounts } from "./channel.accounts";

const id = (n: number) => `0193a4b2-0000-7000-8000-${String(n).padStart(12, "0")}`;
const config = (channels: unknown[]) => parseConfig({ channels }, { env: {} });

describe("channel accounts from the config", () => {
  test.each([
    [[{ id: id(1), channel: "whatsapp", provider: "telegram", name: "wrong" }], 'provider "telegram" cannot serve channel "whatsapp"'],
    [[{ id: id(1), channel: "telegram", provider: "telegram", name: "tg", settings: {} }], 'key "channels[0].settings.bot_token"'],
    [
      [
        { id: id(1), channel: "telegram", provider: "sandbox", name: "a", default: true },
        { id: id(2), channel: "telegram", provider: "sandbox", name: "b", default: true },
      ],
      "already has a default telegram account",
    ],
    [
      [
        { id: id(1), channel: "email", provider: "sandbox", name: "a" },
        { id: id(1), channel: "x", provider: "sandbox", name: "b" },
      ],
      "is used by another [[channels]] entry",
    ],
    [
      [{ id: id(1), channel: "whatsapp", provider: "sandbox", name: "s", settings: { sent_after_ms: -1 } }],
      'key "channels[0].settings.sent_after_ms" has value -1',
    ],
  ])("refused at start: %p", (channels, message) => {
    expect(() => validateChannelAccounts(config(channels as unknown[]))).toThrow(ConfigError);
    expect(() => validateChannelAccounts(config(channels as unknown[]))).toThrow(message as string);
  });

  test("two default e-mail accounts are allowed (e-mail names its account per send)", () => {
    const accounts = validateChannelAccounts(
      config([
        { id: id(1), channel: "email", provider: "sandbox", name: "a", default: true },
        { id: id(2), channel: "email", provider: "sandbox", name: "b", default: true },
      ]),
    );
    expect(accounts).toHaveLength(2);
  });

  test("an account whose receivers cannot start is marked error; the others start", async () => {
    const accounts = validateChannelAccounts(
      config([
        {
          id: id(1),
          channel: "email",
          provider: "smtp",
          name: "mail",
          settings: { host: "127.0.0.1", port: 25, from: "a@b.example", inbound_smtp_listen: "999.1.1.1:1" },
        },
        { id: id(2), channel: "whatsapp", provider: "sandbox", name: "wa" },
      ]),
    );
    const runtime = createChannelRuntime({
      accounts,
      context: () => ({
        fetch,
        fetchUrl: async () => ({ ok: false, code: "URL_NOT_ALLOWED", retry: false, message: "URL not allowed: test" }),
        requestTimeoutMs: 15_000,
        now: () => new Date(),
        log: silentLogger,
        publicUrl: "http://localhost",
        dataDir: "/tmp",
        state: { read: async () => undefined, write: async () => {}, get: () => undefined, set: () => {} },
      }),
    });
    await runtime.start();
    expect(runtime.get(id(1))!.status).toBe("error");
    expect(runtime.get(id(2))!.status).toBe("active");
    await runtime.stop();
  });
});
