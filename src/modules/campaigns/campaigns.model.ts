/** Request and response schemas of /campaigns (they validate requests and feed the OpenAPI document). */
import { t } from "elysia";
import { FilterModel } from "../segments/segments.model";
import { EXCLUSION_REASONS, type ExclusionReason } from "../../channels/channel.eligibility";
import { CHANNELS, FAILURE_REASONS } from "../../channels/channel.types";
import { PageQuery } from "../../platform/http/pagination";
import { Money } from "../../platform/http/schemas";

export const MAX_AUDIENCE_IDS = 10_000;
export const CAMPAIGN_STATUSES = ["scheduled", "running", "paused", "completed", "canceled", "failed"] as const;
export const RECIPIENT_STATUSES = ["pending", "sent", "delivered", "read", "failed", "excluded", "canceled"] as const;
export const PAUSE_REASONS = ["MANUAL", "INSUFFICIENT_BALANCE", "ERROR_RATE"] as const;
/**
 * A recipient's reason: why it was excluded (the estimate's words), why its message failed (message.failed's
 * `error.reason`), or PARAM_MISSING (a contact reference of askValues had no value and no fallback: no message).
 * NB! Responses are validated: a reason missing here turns GET …/recipients into an error.
 */
export const RECIPIENT_REASONS = [...EXCLUSION_REASONS, ...FAILURE_REASONS, "PARAM_MISSING"] as const;

const Uuid = { format: "uuid" } as const;

export { Money };

export const AudienceModel = t.Union(
  [
    t.Object(
      {
        type: t.Literal("tags"),
        tags: t.Array(t.String({ minLength: 1, maxLength: 100 }), { minItems: 1, maxItems: 20 }),
        match: t.Optional(t.UnionEnum(["any", "all"], { default: "any", description: "any: a contact with at least one tag; all: with every tag" })),
      },
      { additionalProperties: false },
    ),
    t.Object(
      { type: t.Literal("contacts"), contactIds: t.Array(t.String(Uuid), { minItems: 1, maxItems: MAX_AUDIENCE_IDS }) },
      { additionalProperties: false },
    ),
    t.Object(
      {
        type: t.Literal("segment"),
        segmentId: t.String({ ...Uuid, description: "a saved segment (GET /segments); its filter is read when the campaign is created" }),
      },
      { additionalProperties: false },
    ),
    t.Object({ type: t.Literal("filter"), filter: FilterModel }, { additionalProperties: false }),
  ],
  { title: "CampaignAudience", description: "Resolved into recipients when the campaign starts (a snapshot)." },
);

const campaignFields = {
  templateId: t.String({ ...Uuid, description: "an approved template (GET /templates); its channel account sends the campaign" }),
  channelAccountId: t.Optional(t.String({ ...Uuid, description: "must be the template's account when given" })),
  audience: AudienceModel,
  askValues: t.Optional(
    t.Record(t.String(), t.String({ maxLength: 1024 }), {
      default: {},
      description:
        'Template param → literal text or a contact reference with an optional fallback: "{{contact.firstName | \\"friend\\"}}", "{{contact.customFields.plan}}".',
    }),
  ),
  headerMediaId: t.Optional(t.Union([t.String(Uuid), t.Null()], { description: "stored media (POST /media) for a template with a media header" })),
  scheduledAt: t.Optional(t.Union([t.String({ format: "date-time" }), t.Null()], { description: "start later; absent or null starts at once" })),
};

export const EstimateBody = t.Object(
  { name: t.Optional(t.String({ maxLength: 200 })), ...campaignFields },
  { title: "CampaignEstimateRequest", additionalProperties: false },
);
export const CreateCampaignBody = t.Object(
  { name: t.String({ minLength: 1, maxLength: 200 }), ...campaignFields },
  { title: "CampaignCreateRequest", additionalProperties: false },
);
export type EstimateInput = typeof EstimateBody.static;

/** Recipients excluded, by reason (every reason of channel.eligibility.ts EXCLUSIONS). */
export const Excluded = t.Object(Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, t.Integer()])) as Record<ExclusionReason, ReturnType<typeof t.Integer>>, {
  title: "CampaignExclusions",
});

export const EstimateModel = t.Object(
  {
    channel: t.UnionEnum(CHANNELS),
    matched: t.Integer({ description: "recipients matched by the audience" }),
    sendable: t.Integer({ description: "recipients that can be sent to" }),
    excluded: Excluded,
    unitPrice: t.String({ description: "decimal text, 6 places" }),
    estimatedCost: Money,
    balance: Money,
    sufficientBalance: t.Boolean(),
    dailyDmLimit: t.Union([t.Integer(), t.Null()], { description: "the account's daily DM limit when one applies (X)" }),
  },
  { title: "CampaignEstimate" },
);

export const CampaignModel = t.Object(
  {
    id: t.String(),
    name: t.String(),
    status: t.UnionEnum(CAMPAIGN_STATUSES),
    channel: t.UnionEnum(CHANNELS),
    channelAccountId: t.String(),
    templateId: t.String(),
    audience: AudienceModel,
    askValues: t.Record(t.String(), t.String()),
    headerMediaId: t.Union([t.String(), t.Null()]),
    scheduledAt: t.Union([t.String(), t.Null()]),
    startedAt: t.Union([t.String(), t.Null()]),
    completedAt: t.Union([t.String(), t.Null()]),
    canceledAt: t.Union([t.String(), t.Null()]),
    createdAt: t.String(),
    updatedAt: t.String(),
    stats: t.Object(
      {
        matched: t.Integer(),
        sendable: t.Integer(),
        excluded: Excluded,
        pending: t.Integer(),
        sent: t.Integer(),
        delivered: t.Integer(),
        read: t.Integer(),
        failed: t.Integer(),
        canceled: t.Integer(),
        replied: t.Integer(),
      },
      { description: "recipients by their furthest status (each counted once); replied: contacts who wrote in after their campaign message" },
    ),
    funnel: t.Object(
      {
        sent: t.Integer({ description: "recipients whose message was sent (and maybe delivered and read since)" }),
        delivered: t.Integer({ description: "recipients whose message was delivered (and maybe read since)" }),
        read: t.Integer({ description: "recipients whose message was read" }),
        replied: t.Integer({ description: "recipients who wrote in after their message" }),
      },
      {
        description:
          "cumulative: each stage counts the recipients that reached it or a later one (sent ≥ delivered ≥ read); stats has the same recipients by their furthest status",
      },
    ),
    cost: t.Object({ estimated: Money, spent: Money }),
    progress: t.Integer({ minimum: 0, maximum: 100, description: "recipients done (not pending) of those matched, in percent" }),
    pauseReason: t.Union([t.UnionEnum(PAUSE_REASONS), t.Null()]),
    failureReason: t.Union([t.String(), t.Null()]),
  },
  { title: "Campaign" },
);

export const RecipientModel = t.Object(
  {
    contactId: t.String(),
    status: t.UnionEnum(RECIPIENT_STATUSES),
    reason: t.Union([t.UnionEnum(RECIPIENT_REASONS), t.Null()], {
      description: "excluded: the exclusion reason (noIdentity …); failed: the message's normalized error.reason (USER_BLOCKED …)",
    }),
    messageId: t.Union([t.String(), t.Null()]),
    updatedAt: t.String(),
  },
  { title: "CampaignRecipient" },
);

// NB! Literal unions, not UnionEnum: Elysia fills a missing optional UnionEnum query value with its first member.
const oneOf = <T extends string>(values: readonly T[], description: string) =>
  t.Optional(
    t.Union(
      values.map((v) => t.Literal(v)),
      { description },
    ),
  );
export const ListQuery = t.Object({
  ...PageQuery,
  status: oneOf(CAMPAIGN_STATUSES, "only campaigns in this status"),
  channel: oneOf(CHANNELS, "only campaigns on this channel"),
});
export const RecipientsQuery = t.Object({
  ...PageQuery,
  status: oneOf(RECIPIENT_STATUSES, "only recipients in this status"),
  reason: oneOf(RECIPIENT_REASONS, "only recipients with this reason (an exclusion reason, or a failure reason such as USER_BLOCKED)"),
});
export const IdParams = t.Object({ id: t.String() });
