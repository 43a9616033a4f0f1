/**
 * `[channels.settings]` of a `provider = "x"` account (DESIGN §3, fixed keys).
 *
 * Two ways to authenticate sends, checked at start-up by `readXSettings`:
 * - OAuth 2.0 user token: `access_token` alone (scopes dm.write dm.read tweet.read users.read);
 * - OAuth 1.0a user context: `consumer_key` + `consumer_secret` + `access_token` + `access_token_secret`.
 * Receiving (Account Activity webhooks) needs `consumer_secret` in either case: X signs CRC answers and
 * event deliveries with the app's consumer secret, so an OAuth2-only account can send but never receive.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export const xSettings = Type.Object(
  {
    user_id: Type.String({ minLength: 1, pattern: "^[0-9]+$", description: "Numeric user id of the X account that sends and receives the DMs." }),
    access_token: Type.String({ default: "", description: "OAuth 2.0 user access token, or with the consumer keys the OAuth 1.0a access token." }),
    access_token_secret: Type.String({ default: "", description: "OAuth 1.0a access token secret (leave empty for OAuth 2.0)." }),
    consumer_key: Type.String({ default: "", description: "App API key (OAuth 1.0a consumer key)." }),
    consumer_secret: Type.String({
      default: "",
      description:
        "App API key secret. Signs OAuth 1.0a requests and verifies Account Activity webhooks (CRC and x-twitter-webhooks-signature); without it the account cannot receive.",
    }),
    daily_dm_limit: Type.Integer({
      minimum: 0,
      default: 1000,
      description:
        "DMs this account may send per 24 h; the engine answers 429 RATE_LIMITED beyond it. Default 1000 = X's per-user limit for DM creation " +
        "(1000 requests / 24 h per user, besides 200 / 15 min per user and 15000 / 24 h per app). 0 = no limit of our own (X's 429s still apply).",
    }),
    base_url: Type.String({ default: "https://api.x.com", description: "X API host (tests point it at a fake)." }),
  },
  { additionalProperties: true },
);
export type XSettings = Static<typeof xSettings>;

export type XAuthMode = "oauth1" | "oauth2";

export function readXSettings(raw: Record<string, unknown>, accountId: string): { settings: XSettings; auth: XAuthMode } {
  const settings = Value.Default(xSettings, structuredClone(raw)) as XSettings;
  const oauth1 = [settings.consumer_key, settings.consumer_secret, settings.access_token, settings.access_token_secret];
  if (oauth1.every(Boolean)) return { settings, auth: "oauth1" };
  if (settings.consumer_key || settings.access_token_secret) {
    throw new Error(`channel ${accountId} (x): OAuth 1.0a needs all of settings.consumer_key, consumer_secret, access_token and access_token_secret`);
  }
  if (settings.access_token) return { settings, auth: "oauth2" };
  throw new Error(`channel ${accountId} (x): settings.access_token is required (OAuth 2.0 user token, or OAuth 1.0a with the consumer keys)`);
}
