/**
 * `[channels.settings]` of a `provider = "whatsapp-cloud"` account (DESIGN.md §3; key names are fixed).
 * Credentials default to "" but must be non-empty, so a config that forgets one fails at start-up naming
 * the key, instead of failing at the first send or — worse — accepting unsigned webhooks.
 */
import { Type, type Static } from "@sinclair/typebox";
import { metaWebhookKeys } from "../meta/meta.settings";

export const whatsappCloudSettings = Type.Object(
  {
    phone_number_id: Type.String({
      minLength: 1,
      default: "",
      description: "Business phone number id (WhatsApp Manager → API setup); messages are sent from it and inbound events are filtered by it.",
    }),
    waba_id: Type.String({ default: "", description: "WhatsApp Business Account id; needed to sync message templates (GET /{waba_id}/message_templates)." }),
    access_token: Type.String({
      minLength: 1,
      default: "",
      description: "System-user access token with whatsapp_business_messaging and whatsapp_business_management. Use env:/file: to keep it out of the TOML.",
    }),
    ...metaWebhookKeys({ app: "Meta", baseUrl: "https://graph.facebook.com/v23.0", host: "Graph API" }),
  },
  { additionalProperties: false },
);

export type WhatsappCloudSettings = Static<typeof whatsappCloudSettings>;
