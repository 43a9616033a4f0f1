/**
 * `[channels.settings]` of a `provider = "tiktok"` account (DESIGN §3, fixed keys).
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export const tiktokSettings = Type.Object(
  {
    business_id: Type.String({ minLength: 1, description: "TikTok business account id (the `user_openid` webhooks carry for this account)." }),
    access_token: Type.String({ minLength: 1, description: "Business Messaging API access token, sent as the `Access-Token` header (no `Bearer`)." }),
    client_secret: Type.String({
      default: "",
      description:
        "App client secret: verifies the `Tiktok-Signature` of webhooks. Without it every webhook is refused (the account can send but not receive).",
    }),
    base_url: Type.String({ default: "https://business-api.tiktok.com", description: "TikTok API for Business host (tests point it at a fake)." }),
  },
  { additionalProperties: true },
);
export type TiktokSettings = Static<typeof tiktokSettings>;

export function readTiktokSettings(raw: Record<string, unknown>): TiktokSettings {
  return Value.Default(tiktokSettings, structuredClone(raw)) as TiktokSettings;
}
