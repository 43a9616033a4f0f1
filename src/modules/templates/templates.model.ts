/**
 * Templates' TypeBox schemas (validation and OpenAPI) and the one view of a row, shared by the routes and the
 * `template.status_changed` event.
 */
import { t } from "elysia";
import { named } from "../../platform/http/schemas";
import { ChannelEnum } from "../messages/messages.model";
import type { TemplateRow } from "./templates.repository";

export const TEMPLATE_STATUSES = ["approved", "pending", "rejected", "paused", "disabled"] as const;

export const Template = named(
  "Template",
  t.Object({
    id: t.String(),
    channel: t.String(),
    channelAccountId: t.String(),
    name: t.String(),
    language: t.String(),
    category: t.String(),
    status: t.String({ description: "approved | pending | rejected | paused | disabled; only approved ones can be sent", examples: ["approved"] }),
    rejectedReason: t.Union([t.String(), t.Null()], {
      description: "why the provider rejected it (Meta's reason, e.g. INVALID_FORMAT); null unless rejected",
      examples: [null],
    }),
    quality: t.Union([t.String(), t.Null()], {
      description: "the provider's quality rating (WhatsApp: GREEN | YELLOW | RED | UNKNOWN); null where there is none",
      examples: [null],
    }),
    source: t.String({ description: "provider (reviewed by the provider: synced or submitted) | local" }),
    components: t.Array(t.Record(t.String(), t.Unknown())),
    params: t.Array(t.String(), { description: "positional params the template takes: body.<n>, button.<n>.<m>" }),
    updatedAt: t.String(),
  }),
);

export const templateView = (r: TemplateRow) => ({
  id: r.id,
  channel: r.channel,
  channelAccountId: r.channelAccountId,
  name: r.name,
  language: r.language,
  category: r.category,
  status: r.status,
  rejectedReason: r.rejectedReason ?? null,
  quality: r.quality ?? null,
  source: r.source,
  components: r.components as unknown as Record<string, unknown>[],
  params: r.params,
  updatedAt: r.updatedAt.toISOString(),
});

export const TemplateButton = t.Object({
  type: t.Union([t.Literal("quick_reply"), t.Literal("url"), t.Literal("phone_number")]),
  text: t.String({ minLength: 1, maxLength: 25 }),
  url: t.Optional(t.String({ minLength: 1, maxLength: 2000, description: "url buttons; may end in {{1}} (param button.<n>.1)" })),
  phoneNumber: t.Optional(t.String({ pattern: "^\\+[1-9]\\d{6,14}$", description: "phone_number buttons, E.164" })),
});

export const CreateTemplateBody = t.Object({
  channel: ChannelEnum,
  channelAccountId: t.Optional(t.String({ format: "uuid" })),
  name: t.String({ pattern: "^[a-z0-9_]{1,512}$", description: "lowercase letters, digits, underscores" }),
  language: t.String({ pattern: "^[a-z]{2,3}(_[A-Z]{2})?$", description: "e.g. en, en_US" }),
  category: t.Optional(t.Union([t.Literal("marketing"), t.Literal("utility"), t.Literal("authentication")])),
  subject: t.Optional(t.String({ minLength: 1, maxLength: 998, description: "e-mail subject; may use {{n}}" })),
  header: t.Optional(t.String({ minLength: 1, maxLength: 60, description: "WhatsApp: a text header (no placeholders)" })),
  body: t.String({ minLength: 1, maxLength: 10_000, description: "text with {{1}}, {{2}} … placeholders (params body.1, body.2 …)" }),
  html: t.Optional(t.String({ minLength: 1, description: "e-mail HTML body; may use {{n}}" })),
  footer: t.Optional(t.String({ maxLength: 200 })),
  buttons: t.Optional(t.Array(TemplateButton, { minItems: 1, maxItems: 10, description: "WhatsApp: quick_reply, url and phone_number buttons" })),
  examples: t.Optional(
    t.Record(t.String(), t.String({ minLength: 1 }), {
      description: "WhatsApp: an example value for every param (body.1, button.0.1 …); Meta reviews the template with them",
    }),
  ),
});
export type CreateTemplateInput = typeof CreateTemplateBody.static;
