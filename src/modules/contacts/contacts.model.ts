/** TypeBox models of the contacts API — the same schemas validate requests and feed OpenAPI. */
import { t } from "elysia";
import { CHANNELS } from "../../channels/channel.types";

export const ChannelModel = t.UnionEnum(CHANNELS, { description: "channel" });
export const CONSENT_STATUSES = ["opted_in", "opted_out", "unknown"] as const;
export type ConsentStatus = (typeof CONSENT_STATUSES)[number];
export const CONSENT_SOURCES = ["api", "inbound_keyword", "provider", "campaign_unsubscribe", "import"] as const;
export type ConsentSource = (typeof CONSENT_SOURCES)[number];

const nullableString = (max: number) => t.Optional(t.Union([t.String({ maxLength: max }), t.Null()]));

export const IdentityInput = t.Object({
  channel: ChannelModel,
  value: t.String({
    description: "whatsapp: phone number (E.164); email: address; instagram/x/tiktok/telegram: user id or @username (pending); messenger: page-scoped id",
  }),
});

export const ContactModel = t.Object(
  {
    id: t.String({ format: "uuid" }),
    firstName: t.Union([t.String(), t.Null()]),
    lastName: t.Union([t.String(), t.Null()]),
    city: t.Union([t.String(), t.Null()]),
    country: t.Union([t.String(), t.Null()]),
    identities: t.Array(t.Object({ channel: t.String(), value: t.String(), status: t.Union([t.Literal("verified"), t.Literal("pending")]) })),
    tags: t.Array(t.String()),
    customFields: t.Record(t.String(), t.Any()),
    consent: t.Record(
      t.String(),
      t.Object({
        status: t.UnionEnum(CONSENT_STATUSES),
        updatedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
      }),
      { description: "per channel of the contact's identities (and any channel with recorded consent)" },
    ),
    blocked: t.Boolean(),
    createdAt: t.String({ format: "date-time" }),
    updatedAt: t.String({ format: "date-time" }),
  },
  { title: "Contact" },
);
export type Contact = typeof ContactModel.static;

export const ContactUpsertBody = t.Object({
  firstName: nullableString(200),
  lastName: nullableString(200),
  city: nullableString(200),
  country: nullableString(100),
  identities: t.Array(IdentityInput, { minItems: 1, maxItems: 50, description: "matching keys; at least one" }),
  customFields: t.Optional(t.Record(t.String(), t.Any(), { description: "custom field key → value; null clears" })),
  tags: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, description: "tag names to add; missing tags are created" })),
  optIn: t.Optional(t.Boolean({ description: "true → opted_in, false → opted_out on the channels of the given identities" })),
});
export type ContactUpsertInput = typeof ContactUpsertBody.static;

export const ContactUpsertResult = t.Object({ created: t.Boolean(), contact: ContactModel }, { title: "ContactUpsertResult" });

export const ContactPatchBody = t.Object({
  firstName: nullableString(200),
  lastName: nullableString(200),
  city: nullableString(200),
  country: nullableString(100),
  blocked: t.Optional(t.Boolean()),
  identities: t.Optional(t.Array(IdentityInput, { maxItems: 50, description: "replaces the contact's identities" })),
  customFields: t.Optional(t.Record(t.String(), t.Any(), { description: "merged; null clears a value" })),
  tags: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 100, description: "replaces the contact's tags" })),
});
export type ContactPatchInput = typeof ContactPatchBody.static;

export const ChannelsBody = t.Object({ channels: t.Array(ChannelModel, { minItems: 1, maxItems: CHANNELS.length }) });
export const TagsBody = t.Object({ tags: t.Array(t.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 100 }) });
/** POST /contacts/{id}/merge (DESIGN §21). */
export const ContactMergeBody = t.Object({
  fromContactId: t.String({ minLength: 1, maxLength: 100, description: "the contact folded into {id}; it is gone afterwards (404)" }),
});

export const TagModel = t.Object(
  { id: t.String(), name: t.String(), contactCount: t.Integer(), createdAt: t.String({ format: "date-time" }) },
  { title: "Tag" },
);
export const TagCreateBody = t.Object({ name: t.String({ minLength: 1, maxLength: 100 }) });

export const CUSTOM_FIELD_TYPES = ["text", "number", "boolean", "date", "select"] as const;
export type CustomFieldType = (typeof CUSTOM_FIELD_TYPES)[number];
export const CustomFieldModel = t.Object(
  {
    id: t.String(),
    key: t.String(),
    label: t.String(),
    type: t.UnionEnum(CUSTOM_FIELD_TYPES),
    options: t.Union([t.Array(t.String()), t.Null()]),
    createdAt: t.String({ format: "date-time" }),
  },
  { title: "CustomField" },
);
export const CustomFieldCreateBody = t.Object({
  key: t.String({ description: "^[a-z][a-z0-9_]{0,63}$" }),
  label: t.String({ minLength: 1, maxLength: 200 }),
  type: t.UnionEnum(CUSTOM_FIELD_TYPES),
  options: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 200 }), { description: "required for select, not allowed otherwise" })),
});

export const ContactImportModel = t.Object(
  {
    id: t.String(),
    status: t.Union([t.Literal("queued"), t.Literal("running"), t.Literal("completed"), t.Literal("failed"), t.Literal("cancelled")]),
    format: t.Union([t.Literal("ndjson"), t.Literal("csv")]),
    bytes: t.Integer(),
    processed: t.Integer(),
    created: t.Integer(),
    updated: t.Integer(),
    failed: t.Integer(),
    consentKept: t.Integer({ description: "rows whose optIn was not applied because of an earlier explicit opt-out" }),
    errors: t.Array(t.Object({ row: t.Integer(), pointer: t.String(), message: t.String() })),
    errorsTruncated: t.Boolean(),
    error: t.Union([t.String(), t.Null()]),
    createdAt: t.String({ format: "date-time" }),
    startedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
    finishedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  },
  { title: "ContactImport" },
);
export const ContactImportSummaryModel = t.Omit(ContactImportModel, ["errors", "errorsTruncated"], { title: "ContactImportSummary" });
