/** `[[social_accounts]]` at start-up: what is refused, with a message naming the key. */
import { describe, expect, test } from "bun:test";
import { parseConfig } from "../../config/config.load";
import { sandboxConfigToml } from "../../cli/init";
import { validateSocialAccounts } from "./social.accounts";

const ID = "0193a4b2-0000-7000-8000-0000000000e1";
const validate = (social_accounts: unknown[], env: Record<string, string> = {}) => validateSocialAccounts(parseConfig({ social_accounts }, { env }));

describe("[[social_accounts]] validation", () => {
  const refused: [string, unknown[], RegExp][] = [
    ["unknown provider", [{ id: ID, platform: "x", provider: "myspace" }], /social_accounts\[0\]\.provider.*"myspace"/],
    [
      "provider that cannot publish there",
      [{ id: ID, platform: "x", provider: "tiktok", settings: { access_token: "t" } }],
      /provider "tiktok" cannot publish to platform "x"/,
    ],
    [
      "missing setting",
      [{ id: ID, platform: "instagram", provider: "instagram", settings: { access_token: "t" } }],
      /social_accounts\[0\]\.settings\.ig_user_id/,
    ],
    ["unknown sandbox setting", [{ id: ID, platform: "x", provider: "sandbox", settings: { token: "t" } }], /social_accounts\[0\]\.settings/],
    ["X without a complete auth", [{ id: ID, platform: "x", provider: "x", settings: { user_id: "1", consumer_key: "k" } }], /OAuth 1\.0a/],
    [
      "duplicate id",
      [
        { id: ID, platform: "x", provider: "sandbox" },
        { id: ID, platform: "tiktok", provider: "sandbox" },
      ],
      /social_accounts\[1\].*used by another/,
    ],
  ];
  for (const [name, accounts, message] of refused) test(`${name} → refused naming the key`, () => expect(() => validate(accounts)).toThrow(message));

  test("bad platform is a config schema error naming the key", () => {
    expect(() => validate([{ id: ID, platform: "myspace" }])).toThrow(/social_accounts\[0\]\.platform/);
  });

  test("secrets come from env: and defaults are applied", () => {
    const [a] = validate([{ id: ID, platform: "tiktok", provider: "tiktok", settings: { access_token: "env:TT_TOKEN" } }], { TT_TOKEN: "secret" });
    expect(a!.settings).toEqual({
      access_token: "secret",
      privacy_level: "PUBLIC_TO_EVERYONE",
      base_url: "https://open.tiktokapis.com",
      processing_wait_ms: 120_000,
      timeout_ms: 60_000,
    });
    expect(a!.name).toBe("tiktok (tiktok)");
  });

  test("init writes one sandbox account per platform, and they validate", () => {
    const accounts = validateSocialAccounts(parseConfig(Bun.TOML.parse(sandboxConfigToml()), { env: {} }));
    expect(accounts.map((a) => [a.platform, a.provider])).toEqual([
      ["instagram", "sandbox"],
      ["facebook", "sandbox"],
      ["x", "sandbox"],
      ["tiktok", "sandbox"],
    ]);
  });
});
