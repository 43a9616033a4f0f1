/**
 * /social: accounts, posts (create, list, detail, delete, schedule, cancel, approve) and analytics read
 * from the tables the analytics job fills. Thin: see social.service.ts and social.analytics.ts.
 */
import { Elysia, t } from "elysia";
import type { SocialNeeds } from "./social.needs";
import { AppError, notFound } from "../../platform/errors";
import { mediaHeaders } from "../media/media.headers";
import { getMedia } from "../media/media.service";
import { MEDIA_LINK_PATH } from "./social.media-links";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, pageLimit, queryDate, toPage } from "../../platform/http/pagination";
import { mediaView } from "./social.analytics";
import {
  AnalyticsQuery,
  AnalyticsSummaryModel,
  CreatePostBody,
  DeletedPostModel,
  IdParams,
  ListPostsQuery,
  MediaQuery,
  PlatformAnalyticsModel,
  PlatformAnalyticsQuery,
  PlatformMediaModel,
  PlatformParams,
  RefreshAnalyticsBody,
  RefreshAnalyticsModel,
  SchedulePostBody,
  SocialAccountModel,
  SocialPostModel,
  UpdatePostBody,
} from "./social.model";
import type { Social } from "./social.build";

function checkRange(q: { from?: string; to?: string }): void {
  if (q.from && q.to && q.from > q.to)
    throw new AppError("VALIDATION_FAILED", "from is after to", [{ pointer: "query:from", message: "must not be after to" }]);
}

/**
 * The public side: signed links to uploaded media for platforms that pull media by URL (Instagram). No API
 * key; the signature and expiry are the authorisation. Unknown, forged or expired links are 404.
 */
export const socialPublicRoutes = (deps: SocialNeeds, s: Social) => {
  return new Elysia({ tags: ["Inbound webhooks"] }).get(
    `${MEDIA_LINK_PATH}/:companyId/:mediaId`,
    async ({ params, query }) => {
      const row = (await s.mediaLinks.verify(params.companyId, params.mediaId, query.exp, query.sig))
        ? await getMedia({ db: deps.db, companyId: params.companyId, id: params.mediaId })
        : undefined;
      const file = row && Bun.file(row.path);
      if (!row || !file || !(await file.exists())) throw notFound("Media");
      return new Response(file, {
        // Inline for what a platform shows (images, video); anything else downloads, sandboxed either way.
        headers: { ...mediaHeaders(row, { inline: true }), "cache-control": "private, max-age=3600" },
      });
    },
    {
      params: t.Object({ companyId: t.String(), mediaId: t.String() }),
      query: t.Object({ exp: t.Optional(t.String()), sig: t.Optional(t.String()) }),
      detail: {
        summary: "Signed link to uploaded media, fetched by platforms that pull media by URL (Instagram)",
        operationId: "getSocialMediaLink",
        "x-error-codes": ["NOT_FOUND"],
        "x-openapi": {
          security: [],
          responses: {
            "200": {
              description: "The file's bytes",
              content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } },
            },
          },
        },
      },
    },
  );
};

export const socialRoutes = (deps: SocialNeeds, s: Social) => {
  const svc = s.service;

  return new Elysia({ tags: ["Social"] })
    .use(deps.guard)
    .get("/social/accounts", async ({ auth }) => ({ data: svc.listAccounts(await s.slugOf(auth.companyId)) }), {
      scope: "social:read",
      response: { 200: data(t.Array(SocialAccountModel)), ...errors(403) },
      detail: { summary: "Social accounts of the company with status and platform limits", operationId: "listSocialAccounts" },
    })
    .get(
      "/social/posts",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0] as string | undefined;
        const { posts } = await svc.listPosts({
          companyId: auth.companyId,
          limit: limit + 1,
          before,
          status: query.status,
          accountId: query.accountId,
          from: queryDate(query.from, "from"),
          to: queryDate(query.to, "to"),
        });
        return toPage(
          posts,
          limit,
          (p) => [p.id],
          (p) => p,
        );
      },
      {
        scope: "social:read",
        query: ListPostsQuery,
        response: { 200: list(SocialPostModel), ...errors(403, 422) },
        detail: { summary: "List posts, newest first; filter by status, account and scheduledAt range", operationId: "listSocialPosts" },
      },
    )
    .post(
      "/social/posts",
      ({ auth, body, idem }) =>
        idem.batch(201, async () => (await svc.createPost({ companyId: auth.companyId, companySlug: await s.slugOf(auth.companyId), input: body })).post),
      {
        scope: "social:write",
        body: CreatePostBody,
        response: { 201: data(SocialPostModel), ...errors(403, 409, 422) },
        detail: {
          summary: "Create a post: a draft, scheduled (scheduledAt) or published at once (publishNow)",
          description:
            "409 SOCIAL_APPROVAL_REQUIRED: requiresApproval with scheduledAt/publishNow. 422 SOCIAL_POST_INVALID (a platform rule; the pointer names the field), SOCIAL_PLATFORM_UNAVAILABLE (an account not connected), VALIDATION_FAILED.",
          operationId: "createSocialPost",
          "x-error-codes": ["SOCIAL_POST_INVALID", "SOCIAL_PLATFORM_UNAVAILABLE", "STORAGE_LIMIT_REACHED"],
        },
      },
    )
    .get("/social/posts/:id", async ({ auth, params }) => ({ data: (await svc.getPost({ companyId: auth.companyId, id: params.id })).post }), {
      scope: "social:read",
      params: IdParams,
      response: { 200: data(SocialPostModel), ...errors(403, 404) },
      detail: { summary: "Post detail with a status per target", operationId: "getSocialPost" },
    })
    .patch(
      "/social/posts/:id",
      ({ auth, params, body, idem }) =>
        idem.batch(
          200,
          async () => (await svc.updatePost({ companyId: auth.companyId, companySlug: await s.slugOf(auth.companyId), id: params.id, input: body })).post,
        ),
      {
        scope: "social:write",
        params: IdParams,
        body: UpdatePostBody,
        response: { 200: data(SocialPostModel), ...errors(403, 404, 409, 422) },
        detail: {
          summary: "Change a post that is not publishing or published (an edit withdraws its approval)",
          description: "409 SOCIAL_POST_NOT_EDITABLE once publishing, published or partially_published; 422 as for POST /social/posts.",
          operationId: "updateSocialPost",
          "x-error-codes": ["SOCIAL_POST_INVALID", "SOCIAL_PLATFORM_UNAVAILABLE", "SOCIAL_POST_NOT_EDITABLE", "CONFLICT"],
        },
      },
    )
    .delete(
      "/social/posts/:id",
      async ({ auth, params }) => {
        const out = await svc.deletePost({ companyId: auth.companyId, id: params.id });
        return { data: { id: out.id, deleted: true as const, notRemoved: out.notRemoved } };
      },
      {
        scope: "social:write",
        params: IdParams,
        response: { 200: data(DeletedPostModel), ...errors(403, 404, 409) },
        detail: {
          summary: "Delete a post; a published one is removed from Facebook and X, the targets left on their platform are listed",
          operationId: "deleteSocialPost",
          "x-error-codes": ["SOCIAL_POST_NOT_EDITABLE", "CONFLICT"],
        },
      },
    )
    .post(
      "/social/posts/:id/schedule",
      ({ auth, params, body, idem }) =>
        idem.batch(
          200,
          async () => (await svc.schedulePost({ companyId: auth.companyId, companySlug: await s.slugOf(auth.companyId), id: params.id, input: body })).post,
        ),
      {
        scope: "social:write",
        params: IdParams,
        body: SchedulePostBody,
        response: { 200: data(SocialPostModel), ...errors(403, 404, 409, 422) },
        detail: {
          summary: "Schedule a post ({scheduledAt}) or publish it at once ({publishNow: true})",
          operationId: "scheduleSocialPost",
          "x-error-codes": ["SOCIAL_POST_INVALID", "SOCIAL_PLATFORM_UNAVAILABLE", "SOCIAL_APPROVAL_REQUIRED", "SOCIAL_POST_NOT_EDITABLE", "CONFLICT"],
        },
      },
    )
    .post(
      "/social/posts/:id/cancel",
      ({ auth, params, idem }) => idem.batch(200, async () => (await svc.cancelPost({ companyId: auth.companyId, id: params.id })).post),
      {
        scope: "social:write",
        params: IdParams,
        response: { 200: data(SocialPostModel), ...errors(403, 404, 409) },
        detail: {
          summary: "Cancel a draft, pending-approval or scheduled post",
          operationId: "cancelSocialPost",
          "x-error-codes": ["SOCIAL_POST_NOT_EDITABLE", "CONFLICT"],
        },
      },
    )
    .post(
      "/social/posts/:id/approve",
      ({ auth, params, idem }) => idem.batch(200, async () => (await svc.approvePost({ companyId: auth.companyId, id: params.id })).post),
      {
        scope: "social:write",
        params: IdParams,
        response: { 200: data(SocialPostModel), ...errors(403, 404, 409) },
        detail: {
          summary: "Approve a post that requires approval (then it can be scheduled)",
          operationId: "approveSocialPost",
          "x-error-codes": ["SOCIAL_POST_NOT_EDITABLE", "CONFLICT"],
        },
      },
    )
    .get(
      "/social/analytics/summary",
      async ({ auth, query }) => {
        checkRange(query);
        return { data: await s.analytics.summary({ companyId: auth.companyId, companySlug: await s.slugOf(auth.companyId), query }) };
      },
      {
        scope: "social:read",
        query: AnalyticsQuery,
        response: { 200: data(AnalyticsSummaryModel), ...errors(403, 422) },
        detail: { summary: "Totals per platform over a date range (from the last analytics pull)", operationId: "getSocialAnalyticsSummary" },
      },
    )
    .post(
      "/social/analytics/refresh",
      ({ auth, body, idem }) =>
        idem.batch(202, async () =>
          s.analytics.refresh({ companyId: auth.companyId, companySlug: await s.slugOf(auth.companyId), postId: body.postId, accountId: body.accountId }),
        ),
      {
        scope: "social:write",
        body: RefreshAnalyticsBody,
        response: { 202: data(RefreshAnalyticsModel), ...errors(403, 404, 422, 429) },
        detail: {
          summary: "Pull analytics now: the company's accounts with published posts, or those of {postId}, or {accountId}",
          description:
            "Queues a pull of each account at once (a durable job); the numbers appear on GET /social/posts/{id}, /social/media and the analytics within seconds. An account is pulled at most once per [social] refresh_interval_seconds (60): sooner it is listed under rateLimited, and when no asked account can be pulled the answer is 429 RATE_LIMITED with Retry-After.",
          operationId: "refreshSocialAnalytics",
          "x-error-codes": ["RATE_LIMITED"],
        },
      },
    )
    .get(
      "/social/analytics/:platform",
      async ({ auth, params, query }) => {
        checkRange(query);
        return {
          data: await s.analytics.platform({ companyId: auth.companyId, companySlug: await s.slugOf(auth.companyId), platform: params.platform, query }),
        };
      },
      {
        scope: "social:read",
        params: PlatformParams,
        query: PlatformAnalyticsQuery,
        response: { 200: data(PlatformAnalyticsModel), ...errors(403, 404, 422) },
        detail: { summary: "Daily series and top posts of one platform (unknown platform: 404)", operationId: "getSocialPlatformAnalytics" },
      },
    )
    .get(
      "/social/media",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const cursor = decodeCursor(query.cursor) as [number, string, string] | null;
        const { media } = await s.analytics.listMedia({
          companyId: auth.companyId,
          companySlug: await s.slugOf(auth.companyId),
          accountId: query.accountId,
          limit: limit + 1,
          after: cursor ?? undefined,
        });
        return toPage(media, limit, (m) => [m.publishedAt.getTime(), m.accountId, m.externalId], mediaView);
      },
      {
        scope: "social:read",
        query: MediaQuery,
        response: { 200: list(PlatformMediaModel), ...errors(403, 404, 422) },
        detail: { summary: "Posts on the platforms with their metrics, including posts not made here; newest first", operationId: "listSocialMedia" },
      },
    );
};
