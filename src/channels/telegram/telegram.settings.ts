/**
 * `[channels.settings]` of a `provider = "telegram"` account (DESIGN §3, fixed keys).
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export const telegramSettings = Type.Object(
  {
    bot_token: Type.String({
      minLength: 1,
      description: "Bot token from @BotFather (`123456:ABC-…`). Use `env:NAME` or `file:/path` to keep it out of the TOML.",
    }),
    secret_token: Type.String({
      default: "",
      pattern: "^[A-Za-z0-9_-]{0,256}$",
      description:
        "Webhook mode: secret Telegram sends in `X-Telegram-Bot-Api-Secret-Token` (1–256 of A-Z a-z 0-9 _ -). " +
        "Required in webhook mode: without it every webhook request is refused, since nothing else proves it came from Telegram.",
    }),
    mode: Type.Union([Type.Literal("webhook"), Type.Literal("polling")], {
      default: "polling",
      description:
        "`polling`: the appliance long-polls getUpdates (works without a public URL, the common on-prem case). " +
        "`webhook`: start-up registers `<public_url>/hooks/<account id>` with setWebhook (needs a public HTTPS URL on port 443, 80, 88 or 8443).",
    }),
    base_url: Type.String({
      default: "https://api.telegram.org",
      description: "Bot API host (tests point it at a fake; a self-hosted Bot API server works too).",
    }),
  },
  { additionalProperties: true },
);
export type TelegramSettings = Static<typeof telegramSettings>;

/** Settings with defaults applied (the config loader may already have done so; applying twice is harmless). */
export function readTelegramSettings(raw: Record<string, unknown>): TelegramSettings {
  return Value.Default(telegramSettings, structuredClone(raw)) as TelegramSettings;
}
