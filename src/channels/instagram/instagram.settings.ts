/**
 * `[channels.settings]` of a `provider = "instagram"` account (Instagram API with Instagram Login;
 * DESIGN.md §3; key names are fixed). Credentials default to "" but must be non-empty.
 */
import { Type, type Static } from "@sinclair/typebox";
import { metaWebhookKeys } from "../meta/meta.settings";

export const instagramSettings = Type.Object(
  {
    ig_user_id: Type.String({ minLength: 1, default: "", description: "Instagram professional account id (the <IG_ID> of POST /<IG_ID>/messages)." }),
    access_token: Type.String({
      minLength: 1,
      default: "",
      description: "Instagram User access token with instagram_business_manage_messages. Use env:/file: to keep it out of the TOML.",
    }),
    ...metaWebhookKeys({ app: "Instagram", baseUrl: "https://graph.instagram.com/v23.0", host: "Instagram Graph" }),
  },
  { additionalProperties: false },
);

export type InstagramSettings = Static<typeof instagramSettings>;
