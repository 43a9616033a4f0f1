/** Request and response schemas of the social API (validation and OpenAPI from the same objects). */
import { t } from "elysia";
import { PageQuery } from "../../platform/http/pagination";

const Platform = t.Union([t.Literal("instagram"), t.Literal("facebook"), t.Literal("x"), t.Literal("tiktok")]);
const DateTime = t.String({ format: "date-time" });
const NullableDateTime = t.Union([DateTime, t.Null()]);

export const SocialAccountModel = t.Object(
  {
    id: t.String(),
    platform: Platform,
    provider: t.Union([t.Literal("sandbox"), t.Literal("instagram"), t.Literal("facebook"), t.Literal("x"), t.Literal("tiktok")]),
    name: t.String(),
    handle: t.Union([t.String(), t.Null()]),
    status: t.Union([t.Literal("connected"), t.Literal("error")], { description: "error: the platform refused our credentials; see lastError" }),
    lastError: t.Union([t.String(), t.Null()]),
    limits: t.Object({
      textMax: t.Integer({ description: "characters (X counts each URL as 23)" }),
      mediaMax: t.Integer(),
      needsMedia: t.Boolean(),
      video: t.Boolean({ description: "a video may be posted (alone)" }),
    }),
  },
  { title: "SocialAccount" },
);

export const PostMediaInput = t.Union(
  [
    t.Object({ mediaId: t.String({ minLength: 1, description: "id from POST /media" }) }, { additionalProperties: false }),
    t.Object(
      {
        url: t.String({ minLength: 1, maxLength: 2048, pattern: "^https?://", description: "public http(s) URL; .mp4/.mov/.webm/.m4v are videos" }),
        kind: t.Optional(t.Union([t.Literal("image"), t.Literal("video")], { description: "overrides the kind guessed from the URL" })),
      },
      { additionalProperties: false },
    ),
  ],
  { description: "{mediaId} or {url}" },
);

const Text = t.String({ maxLength: 63206 });

export const CreatePostBody = t.Object(
  {
    accountIds: t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: 50, description: "social account ids (GET /social/accounts)" }),
    text: t.Optional(Text),
    media: t.Optional(t.Array(PostMediaInput, { maxItems: 10 })),
    overrides: t.Optional(
      t.Record(
        t.String(),
        t.Object({ text: t.Optional(Text), media: t.Optional(t.Array(PostMediaInput, { maxItems: 10 })) }, { additionalProperties: false }),
        {
          description: "per account id: text and/or media replacing the post's for that account",
        },
      ),
    ),
    scheduledAt: t.Optional(t.String({ format: "date-time", description: "publish at (future); without it and publishNow the post is a draft" })),
    publishNow: t.Optional(t.Boolean()),
    requiresApproval: t.Optional(t.Boolean({ description: "scheduling or publishing needs POST /social/posts/{id}/approve first" })),
  },
  { additionalProperties: false },
);

export const UpdatePostBody = t.Object(
  {
    accountIds: t.Optional(t.Array(t.String({ minLength: 1 }), { minItems: 1, maxItems: 50 })),
    text: t.Optional(Text),
    media: t.Optional(t.Array(PostMediaInput, { maxItems: 10 })),
    overrides: t.Optional(CreatePostBody.properties.overrides),
    requiresApproval: t.Optional(t.Boolean()),
  },
  { additionalProperties: false, description: "the fields to change; overrides and media replace the post's whole" },
);

export const SchedulePostBody = t.Object(
  {
    scheduledAt: t.Optional(t.String({ format: "date-time" })),
    publishNow: t.Optional(t.Boolean()),
  },
  { additionalProperties: false, description: "exactly one of scheduledAt (future) and publishNow: true" },
);

const TargetStatus = t.Union([t.Literal("pending"), t.Literal("publishing"), t.Literal("published"), t.Literal("failed"), t.Literal("canceled")]);
export const POST_STATUSES = ["draft", "pending_approval", "scheduled", "publishing", "published", "partially_published", "failed", "canceled"] as const;
const PostStatus = t.Union([
  t.Literal("draft"),
  t.Literal("pending_approval"),
  t.Literal("scheduled"),
  t.Literal("publishing"),
  t.Literal("published"),
  t.Literal("partially_published"),
  t.Literal("failed"),
  t.Literal("canceled"),
]);

const MediaOut = t.Object({
  mediaId: t.Optional(t.String()),
  url: t.Optional(t.String()),
  kind: t.Union([t.Literal("image"), t.Literal("video")]),
});

/** A post's numbers on one platform, as the analytics pull stores them (GET /social/media, post targets). */
const MediaMetrics = t.Object({
  views: t.Integer(),
  reach: t.Integer(),
  likes: t.Integer(),
  comments: t.Integer(),
  shares: t.Integer(),
  engagements: t.Integer(),
});

export const PostTargetMetricsModel = t.Object(
  { ...MediaMetrics.properties, syncedAt: t.String({ format: "date-time", description: "when the platform was asked" }) },
  { title: "SocialPostMetrics" },
);

export const PostTargetModel = t.Object({
  accountId: t.String(),
  platform: Platform,
  status: TargetStatus,
  externalId: t.Union([t.String(), t.Null()], { description: "the platform's post id, stored the moment the platform returns it" }),
  url: t.Union([t.String(), t.Null()]),
  error: t.Union([t.Object({ code: t.String(), message: t.String() }), t.Null()], {
    description: "why the target failed, or (while pending/publishing) why the last attempt did",
  }),
  attempts: t.Integer(),
  publishedAt: NullableDateTime,
  metrics: t.Optional(
    t.Union([PostTargetMetricsModel, t.Null()], {
      description:
        "the latest metrics pulled from the platform (engagements = likes + comments + shares); null until the first pull, which comes [social] metrics_after_publish_seconds (60) after publishing. On the posts API; not in events",
    }),
  ),
});

export const SocialPostModel = t.Object(
  {
    id: t.String(),
    status: PostStatus,
    text: t.String(),
    media: t.Array(MediaOut),
    overrides: t.Record(t.String(), t.Object({ text: t.Optional(t.String()), media: t.Optional(t.Array(MediaOut)) })),
    scheduledAt: NullableDateTime,
    publishedAt: NullableDateTime,
    requiresApproval: t.Boolean(),
    approvedAt: NullableDateTime,
    targets: t.Array(PostTargetModel),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: "SocialPost" },
);

export const DeletedPostModel = t.Object({
  id: t.String(),
  deleted: t.Literal(true),
  notRemoved: t.Array(t.Object({ accountId: t.String(), platform: Platform, externalId: t.Union([t.String(), t.Null()]), reason: t.String() }), {
    description: "published targets still on their platform (the platform allows no deletion, or refused it)",
  }),
});

export const ListPostsQuery = t.Object({
  ...PageQuery,
  status: t.Optional(PostStatus),
  accountId: t.Optional(t.String()),
  from: t.Optional(t.String({ format: "date-time", description: "scheduledAt (or createdAt for unscheduled posts) at or after" })),
  to: t.Optional(t.String({ format: "date-time", description: "… and before" })),
});

export const AnalyticsQuery = t.Object({
  from: t.Optional(t.String({ format: "date", description: "first UTC day (default: 29 days before to)" })),
  to: t.Optional(t.String({ format: "date", description: "last UTC day (default: today)" })),
});

export const PlatformAnalyticsQuery = t.Object({ ...AnalyticsQuery.properties, accountId: t.Optional(t.String()) });

export const AnalyticsSummaryModel = t.Object(
  {
    from: t.String({ format: "date" }),
    to: t.String({ format: "date" }),
    platforms: t.Array(
      t.Object({
        platform: Platform,
        accounts: t.Integer(),
        followers: t.Integer({ description: "latest known, summed over accounts" }),
        posts: t.Integer({ description: "posts published on the platform in the range" }),
        views: t.Integer(),
        reach: t.Integer(),
        engagements: t.Integer(),
        engagementRate: t.Number({ description: "engagements / reach, 4 decimals (0 without reach)" }),
      }),
    ),
  },
  { title: "SocialAnalyticsSummary" },
);

export const PlatformMediaModel = t.Object(
  {
    accountId: t.String(),
    platform: Platform,
    externalId: t.String(),
    postId: t.Union([t.String(), t.Null()], { description: "our post, when it was published from here" }),
    text: t.String(),
    mediaType: t.String(),
    url: t.Union([t.String(), t.Null()]),
    publishedAt: DateTime,
    metrics: MediaMetrics,
    syncedAt: DateTime,
  },
  { title: "SocialMedia" },
);

export const PlatformAnalyticsModel = t.Object(
  {
    platform: Platform,
    from: t.String({ format: "date" }),
    to: t.String({ format: "date" }),
    series: t.Array(t.Object({ date: t.String({ format: "date" }), followers: t.Integer(), views: t.Integer(), reach: t.Integer(), engagements: t.Integer() })),
    topPosts: t.Array(PlatformMediaModel, { description: "up to 10 posts published in the range, most engagements first" }),
  },
  { title: "SocialPlatformAnalytics" },
);

export const RefreshAnalyticsBody = t.Object(
  {
    postId: t.Optional(t.String({ minLength: 1, description: "pull the accounts this post is published on" })),
    accountId: t.Optional(t.String({ minLength: 1, description: "pull this account" })),
  },
  { additionalProperties: false, description: "neither: every account of the company with a published post" },
);

export const RefreshAnalyticsModel = t.Object(
  {
    queued: t.Array(t.Object({ accountId: t.String(), platform: Platform }), { description: "accounts whose pull was queued, to run at once" }),
    rateLimited: t.Array(t.Object({ accountId: t.String(), platform: Platform, retryAt: DateTime }), {
      description: "accounts pulled less than [social] refresh_interval_seconds ago: not queued, ask again at retryAt",
    }),
  },
  { title: "SocialAnalyticsRefresh" },
);

export const MediaQuery = t.Object({ ...PageQuery, accountId: t.Optional(t.String()) });
export const IdParams = t.Object({ id: t.String() });
// NB! Validated as any string: an unknown platform is 404 NOT_FOUND (DESIGN §11), not 422; the document shows the set.
export const PlatformParams = t.Object({ platform: t.String({ "x-openapi-schema": { type: "string", enum: ["instagram", "facebook", "x", "tiktok"] } }) });
