/** Request and response schemas of /sources and /contacts/{id}/source (validation and OpenAPI). */
import { t } from "elysia";
import { CHANNELS } from "../../channels/channel.types";
import { PageQuery } from "../../platform/http/pagination";
import { CODE_PATTERN } from "./sources.links";

export const SOURCE_TYPES = ["link", "qr", "ad", "other"] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
// NB! Literals, not UnionEnum: Elysia fills a missing optional UnionEnum with its first member (a PATCH
// without `type` would reset it to "link").
const Type = t.Union([t.Literal("link"), t.Literal("qr"), t.Literal("ad"), t.Literal("other")], { description: "link | qr | ad | other" });
const Code = t.String({ pattern: CODE_PATTERN, description: "1–64 of A-Za-z0-9_- (unique in the company); generated when absent" });
const DateTime = t.String({ format: "date-time" });

export const CreateSourceBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    type: Type,
    channel: t.UnionEnum(CHANNELS, { description: "the channel contacts write on; links exist for whatsapp, messenger, instagram, telegram" }),
    channelAccountId: t.Optional(t.String({ format: "uuid", description: "default: the company's default account of the channel" })),
    code: t.Optional(Code),
  },
  { title: "SourceCreateRequest", additionalProperties: false },
);

export const UpdateSourceBody = t.Object(
  { name: t.Optional(t.String({ minLength: 1, maxLength: 200 })), type: t.Optional(Type), code: t.Optional(Code) },
  { title: "SourceUpdateRequest", additionalProperties: false, minProperties: 1 },
);

export const SourceStatsModel = t.Object(
  {
    contacts: t.Integer({ description: "contacts first attributed to the source in the period" }),
    conversations: t.Integer({ description: "their conversations" }),
    messages: t.Integer({ description: "their messages, both directions" }),
    recordsWon: t.Union([t.Integer(), t.Null()], { description: "pipeline records of theirs that are won; null when the pipeline module is not licensed" }),
  },
  { title: "SourceStats" },
);

export const SourceModel = t.Object(
  {
    id: t.String(),
    name: t.String(),
    type: Type,
    channel: t.String(),
    channelAccountId: t.String(),
    code: t.String(),
    link: t.Union([t.String(), t.Null()], { description: "click-to-chat link; null when the account has no chat_handle or the channel has no links" }),
    externalId: t.Union([t.String(), t.Null()], { description: "the ad's id at the platform (ad sources made from a referral)" }),
    stats: t.Union([SourceStatsModel, t.Null()], { description: "in GET /sources; null elsewhere" }),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: "Source" },
);

export const ContactSourceModel = t.Union(
  [
    t.Object(
      {
        source: t.Union([SourceModel, t.Null()], { description: "null: removed by hand (later referrals do not attribute again)" }),
        attributedAt: t.Union([DateTime, t.Null()]),
        via: t.Union([t.Literal("auto"), t.Literal("manual")]),
        referral: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: "the provider's raw referral of an automatic attribution" }),
        history: t.Array(
          t.Object({
            fromSourceId: t.Union([t.String(), t.Null()]),
            toSourceId: t.Union([t.String(), t.Null()]),
            via: t.String(),
            by: t.Union([t.String(), t.Null()]),
            at: DateTime,
          }),
        ),
      },
      { title: "ContactSource" },
    ),
    t.Null(),
  ],
  { description: "null: the contact has no source" },
);

export const SetContactSourceBody = t.Object(
  { sourceId: t.Union([t.String({ format: "uuid" }), t.Null()], { description: "a source id, or null to remove" }) },
  { title: "ContactSourceRequest", additionalProperties: false },
);

export const ListSourcesQuery = t.Object({
  ...PageQuery,
  from: t.Optional(t.String({ format: "date-time", description: "statistics from this time (attribution time), inclusive" })),
  to: t.Optional(t.String({ format: "date-time", description: "statistics up to this time, exclusive" })),
});

export const IdParams = t.Object({ id: t.String() });
