/**
 * `[channels.settings]` of a `provider = "messenger"` account (DESIGN.md §3; key names are fixed).
 * Credentials default to "" but must be non-empty: a missing one fails start-up naming the key.
 */
import { Type, type Static } from "@sinclair/typebox";

export const messengerSettings = Type.Object(
  {
    page_id: Type.String({
      minLength: 1,
      default: "",
      description: "Facebook Page id; messages are sent as this Page and inbound entries for other Pages are skipped.",
    }),
    page_access_token: Type.String({
      minLength: 1,
      default: "",
      description: "Page access token with pages_messaging. Use env:/file: to keep it out of the TOML.",
    }),
    app_secret: Type.String({ minLength: 1, default: "", description: "Meta app secret; verifies X-Hub-Signature-256 on every webhook POST." }),
    verify_token: Type.String({
      minLength: 1,
      default: "",
      description: "Token you type into the app's webhook settings; answered in the GET hub.challenge handshake.",
    }),
    base_url: Type.String({ default: "https://graph.facebook.com/v23.0", description: "Graph API host including the version; tests point it at a fake." }),
  },
  { additionalProperties: false },
);

export type MessengerSettings = Static<typeof messengerSettings>;
