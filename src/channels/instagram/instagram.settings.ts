/**
 * `[channels.settings]` of a `provider = "instagram"` account (Instagram API with Instagram Login;
 * DESIGN.md §3; key names are fixed). Credentials default to "" but must be non-empty.
 */
import { Type, type Static } from "@sinclair/typebox";

export const instagramSettings = Type.Object(
  {
    ig_user_id: Type.String({ minLength: 1, default: "", description: "Instagram professional account id (the <IG_ID> of POST /<IG_ID>/messages)." }),
    access_token: Type.String({
      minLength: 1,
      default: "",
      description: "Instagram User access token with instagram_business_manage_messages. Use env:/file: to keep it out of the TOML.",
    }),
    app_secret: Type.String({ minLength: 1, default: "", description: "Instagram app secret; verifies X-Hub-Signature-256 on every webhook POST." }),
    verify_token: Type.String({
      minLength: 1,
      default: "",
      description: "Token you type into the app's webhook settings; answered in the GET hub.challenge handshake.",
    }),
    base_url: Type.String({
      default: "https://graph.instagram.com/v23.0",
      description: "Instagram Graph host including the version; tests point it at a fake.",
    }),
  },
  { additionalProperties: false },
);

export type InstagramSettings = Static<typeof instagramSettings>;
