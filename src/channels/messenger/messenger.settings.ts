/**
 * `[channels.settings]` of a `provider = "messenger"` account (DESIGN.md §3; key names are fixed).
 * Credentials default to "" but must be non-empty: a missing one fails start-up naming the key.
 */
import { Type, type Static } from "@sinclair/typebox";
import { metaWebhookKeys } from "../meta/meta.settings";

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
    ...metaWebhookKeys({ app: "Meta", baseUrl: "https://graph.facebook.com/v23.0", host: "Graph API" }),
  },
  { additionalProperties: false },
);

export type MessengerSettings = Static<typeof messengerSettings>;
