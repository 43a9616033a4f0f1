/**
 * Social posts: the rules of DESIGN §11, no HTTP. Writes join the caller's unit of work (routes wrap them in
 * `idem.batch`), else run in one of their own (db.join), so a post and its publish jobs commit together (outbox).
 * Everything is injected: the repository, the account runtime, the queue, the clock and a media lookup.
 */
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import type { EventBus } from "../../events";
import { newId } from "../../platform/ids";
import type { Queue } from "../../jobs";
import { publisherDefinition } from "../../social-publishers/publisher.registry";
import type { CreatePostBody, SchedulePostBody, UpdatePostBody, SocialAccountModel, SocialPostModel } from "./social.model";
import type { SocialRuntime } from "./social.accounts";
import type { Db } from "../../db/client";
import { createSocialRepository, type PlatformMediaRow, type PostRow, type SocialRepository, type TargetRow } from "./social.repository";
import { checkContent, kindOfUrl, PLATFORM_LIMITS, type Problem } from "./social.rules";
import type { StoredPostMedia } from "./social.table";

export const PUBLISH_JOB = "social.publish";

/** Statuses in which a post can no longer be changed (DESIGN §11). */
const LOCKED = new Set(["publishing", "published", "partially_published"]);

type MediaInput = { mediaId: string } | { url: string; kind?: "image" | "video" };
type Content = { text: string; media: StoredPostMedia[]; overrides: PostRow["overrides"] };
const asInput = (m: StoredPostMedia): MediaInput => (m.mediaId ? { mediaId: m.mediaId } : { url: m.url!, kind: m.kind });

export interface SocialServiceDeps {
  repo: SocialRepository;
  /** The unit of work around the repository's writes (db.unit), and joining the caller's (db.join). */
  unit: Db["unit"];
  join: Db["join"];
  runtime: SocialRuntime;
  queue: Pick<Queue, "enqueueJob">;
  events: EventBus;
  now: () => Date;
  /** Our media's content type, or undefined when the company has no such media. */
  mediaType: (companyId: string, mediaId: string) => Promise<string | undefined>;
  /** `[server] public_url` can be reached from the internet: URL-pulling platforms can fetch uploaded media. */
  publicMediaLinks: boolean;
  /** Why a caller's media URL may never be fetched (`[outbound]` static check, no DNS), or null. */
  urlProblem: (url: string) => string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/**
 * The API's post. `metrics`: the pulled rows of the post's targets (GET answers); without it (events) the
 * targets carry no metrics field.
 */
export function postView(post: PostRow, targets: TargetRow[], metrics?: PlatformMediaRow[]): typeof SocialPostModel.static {
  const metricsOf = (t: TargetRow) => {
    const m = t.externalId === null ? undefined : metrics!.find((r) => r.accountId === t.accountId && r.externalId === t.externalId);
    return m
      ? {
          views: m.views,
          reach: m.reach,
          likes: m.likes,
          comments: m.comments,
          shares: m.shares,
          engagements: m.engagements,
          syncedAt: m.syncedAt.toISOString(),
        }
      : null;
  };
  return {
    id: post.id,
    status: post.status as "draft",
    text: post.text,
    media: post.media,
    overrides: post.overrides,
    scheduledAt: iso(post.scheduledAt),
    publishedAt: iso(post.publishedAt),
    requiresApproval: post.requiresApproval,
    approvedAt: iso(post.approvedAt),
    targets: targets.map((t) => ({
      accountId: t.accountId,
      platform: t.platform as "x",
      status: t.status as "pending",
      externalId: t.externalId,
      url: t.url,
      error: t.errorCode ? { code: t.errorCode, message: t.errorMessage ?? "" } : null,
      attempts: t.attempts,
      publishedAt: iso(t.publishedAt),
      ...(metrics ? { metrics: metricsOf(t) } : {}),
    })),
    createdAt: post.createdAt.toISOString(),
    updatedAt: post.updatedAt.toISOString(),
  };
}

/** A social post that will still publish this media (for DELETE /media → 409 MEDIA_IN_USE): its id, if any. */
export async function socialPostUsingMedia({ db, companyId, mediaId }: { db: Db; companyId: string; mediaId: string }): Promise<string | undefined> {
  return await createSocialRepository(db).postUsingMedia(companyId, mediaId);
}

export function createSocialService(d: SocialServiceDeps) {
  const { repo, runtime, now } = d;

  async function mustGet(companyId: string, id: string): Promise<PostRow> {
    const post = await repo.getPost(companyId, id);
    if (!post) throw notFound("Social post");
    return post;
  }

  /**
   * mustGet for a change of the post: its row locked until the caller's unit ends (repo.lockPost), so the
   * status it checks is the one it writes over — a publish job marking a target `publishing` takes the same
   * lock — and the post is locked before its targets, the publishing engine's order.
   */
  async function mustLock(companyId: string, id: string): Promise<PostRow> {
    const post = await repo.lockPost(id, companyId);
    if (!post) throw notFound("Social post");
    return post;
  }

  async function view(post: PostRow) {
    const targets = await repo.targetsOf([post.id]);
    return postView(post, targets, await repo.metricsOfTargets(targets));
  }

  async function toStoredMedia(companyId: string, items: MediaInput[], pointer: string, details: DetailCollector): Promise<StoredPostMedia[]> {
    const stored: StoredPostMedia[] = [];
    for (const [i, m] of items.entries()) stored.push(await storedMedia(companyId, m, `${pointer}/${i}`, details));
    return stored;
  }

  /** One media item at `pointer` (`/media/0`). */
  async function storedMedia(companyId: string, m: MediaInput, pointer: string, details: DetailCollector): Promise<StoredPostMedia> {
    if ("mediaId" in m) {
      const type = await d.mediaType(companyId, m.mediaId);
      if (type === undefined) details.add(`${pointer}/mediaId`, "no media with this id (upload it with POST /media)");
      else if (!type.startsWith("image/") && !type.startsWith("video/")) details.add(`${pointer}/mediaId`, `is ${type}; posts take images and videos only`);
      return { mediaId: m.mediaId, kind: type?.startsWith("video/") ? "video" : "image" };
    }
    const problem = d.urlProblem(m.url);
    if (problem) details.add(`${pointer}/url`, `URL not allowed: ${problem}`);
    return { url: m.url, kind: m.kind ?? kindOfUrl(m.url) };
  }

  /** 422 SOCIAL_PLATFORM_UNAVAILABLE when an account is gone from the config or not connected. */
  function requireConnected(companySlug: string, accountIds: string[], pointer: (i: number) => string): void {
    const problems: Problem[] = [];
    accountIds.forEach((id, i) => {
      const rt = runtime.get(id);
      if (!rt || rt.account.company !== companySlug) problems.push({ pointer: pointer(i), message: `social account ${id} is no longer configured` });
      else if (rt.status !== "connected")
        problems.push({ pointer: pointer(i), message: `${rt.account.name} is ${rt.status}${rt.lastError ? `: ${rt.lastError}` : ""}` });
    });
    if (problems.length) throw new AppError("SOCIAL_PLATFORM_UNAVAILABLE", "A social account of this post is not connected", problems);
  }

  /** Pending targets get a publish job each, due at `runAt`; jobs of earlier schedules see another token. */
  async function enqueueTargets(post: PostRow, runAt: Date): Promise<string> {
    const token = newId();
    const at = now();
    await repo.updateTargetsOfPost(post.id, {
      status: "pending",
      errorCode: null,
      errorMessage: null,
      attempts: 0,
      progress: {},
      firstAttemptAt: null,
      externalId: null,
      url: null,
      publishedAt: null,
      updatedAt: at,
    });
    for (const t of await repo.targetsOf([post.id]))
      await d.queue.enqueueJob({ type: PUBLISH_JOB, payload: { targetId: t.id, token }, runAt, groupKey: t.accountId });
    return token;
  }

  /** Exactly one of scheduledAt (in the future) and publishNow: true; null = neither (a draft). */
  function readWhen(input: { scheduledAt?: string; publishNow?: boolean }, details: DetailCollector): { runAt: Date; now: boolean } | null {
    const publishNow = input.publishNow === true;
    if (input.scheduledAt !== undefined && publishNow) {
      details.add("/publishNow", "give scheduledAt or publishNow, not both");
      return null;
    }
    if (publishNow) return { runAt: now(), now: true };
    if (input.scheduledAt === undefined) return null;
    const at = new Date(input.scheduledAt);
    if (Number.isNaN(at.getTime())) details.add("/scheduledAt", "must be an ISO 8601 date-time");
    else if (at.getTime() <= now().getTime()) details.add("/scheduledAt", "must be in the future (use publishNow to publish at once)");
    return { runAt: at, now: false };
  }

  /** Accounts, media and overrides of a request, checked and stored-shaped; problems go to `details` (422 VALIDATION_FAILED). */
  async function readContent(
    companyId: string,
    companySlug: string,
    input: { accountIds: string[]; text?: string; media?: MediaInput[]; overrides?: Record<string, { text?: string; media?: MediaInput[] }> },
    details: DetailCollector,
  ): Promise<Content> {
    const seen = new Set<string>();
    input.accountIds.forEach((id, i) => {
      const rt = runtime.get(id);
      if (!rt || rt.account.company !== companySlug) details.add(`/accountIds/${i}`, "no social account with this id (see GET /social/accounts)");
      else if (seen.has(id)) details.add(`/accountIds/${i}`, "listed twice");
      seen.add(id);
    });
    const overrides = input.overrides ?? {};
    for (const key of Object.keys(overrides)) if (!input.accountIds.includes(key)) details.add(`/overrides/${key}`, "not one of accountIds");
    const media = await toStoredMedia(companyId, input.media ?? [], "/media", details);
    const stored: PostRow["overrides"] = {};
    for (const [key, o] of Object.entries(overrides)) {
      stored[key] = {};
      if (o.text !== undefined) stored[key].text = o.text;
      if (o.media !== undefined) stored[key].media = await toStoredMedia(companyId, o.media, `/overrides/${key}/media`, details);
    }
    return { text: input.text ?? "", media, overrides: stored };
  }

  /** 422 SOCIAL_PLATFORM_UNAVAILABLE, then 422 SOCIAL_POST_INVALID with every broken platform rule. */
  function enforceRules(companySlug: string, accountIds: string[], content: Content): void {
    requireConnected(companySlug, accountIds, (i) => `/accountIds/${i}`);
    const problems: Problem[] = [];
    for (const id of accountIds) {
      const rt = runtime.get(id)!;
      const o = content.overrides[id] ?? {};
      const textPointer = o.text !== undefined ? `/overrides/${id}/text` : "/text";
      const mediaPointer = o.media !== undefined ? `/overrides/${id}/media` : "/media";
      const targetMedia = o.media ?? content.media;
      problems.push(...checkContent({ platform: rt.account.platform, text: o.text ?? content.text, media: targetMedia, textPointer, mediaPointer }));
      if (!publisherDefinition(rt.account.provider)!.uploads && !d.publicMediaLinks && targetMedia.some((m) => m.mediaId))
        problems.push({
          pointer: mediaPointer,
          message: `${rt.account.name} pulls media from public URLs, and [server] public_url is not reachable from the internet: give {url} instead of {mediaId}`,
        });
    }
    if (problems.length) throw new AppError("SOCIAL_POST_INVALID", "The post breaks a platform rule", problems);
  }

  function newTargets(postId: string, companyId: string, accountIds: string[], at: Date): TargetRow[] {
    return accountIds.map((accountId) => ({
      id: newId(),
      postId,
      companyId,
      accountId,
      platform: runtime.get(accountId)!.account.platform,
      status: "pending",
      externalId: null,
      url: null,
      errorCode: null,
      errorMessage: null,
      attempts: 0,
      progress: {},
      firstAttemptAt: null,
      publishedAt: null,
      updatedAt: at,
    }));
  }

  return {
    listAccounts(companySlug: string): (typeof SocialAccountModel.static)[] {
      return runtime.forCompany(companySlug).map((r) => {
        const l = PLATFORM_LIMITS[r.account.platform];
        return {
          id: r.account.id,
          platform: r.account.platform,
          provider: r.account.provider,
          name: r.account.name,
          handle: r.handle,
          status: r.status,
          lastError: r.lastError,
          limits: { textMax: l.textMax, mediaMax: l.mediaMax, needsMedia: l.needsMedia, video: l.video },
        };
      });
    },

    async createPost({ companyId, companySlug, input }: { companyId: string; companySlug: string; input: typeof CreatePostBody.static }) {
      return d.join(async () => {
        const details = new DetailCollector();
        const { text, media, overrides: storedOverrides } = await readContent(companyId, companySlug, input, details);
        const when = readWhen(input, details);
        details.throwIfAny();
        enforceRules(companySlug, input.accountIds, { text, media, overrides: storedOverrides });
        if (input.requiresApproval && when)
          throw new AppError(
            "SOCIAL_APPROVAL_REQUIRED",
            "This post needs approval before it is scheduled or published: create it, then POST /social/posts/{id}/approve",
          );

        const at = now();
        const post: PostRow = {
          id: newId(),
          companyId,
          status: when ? (when.now ? "publishing" : "scheduled") : input.requiresApproval ? "pending_approval" : "draft",
          text,
          media,
          overrides: storedOverrides,
          scheduledAt: when && !when.now ? when.runAt : null,
          publishedAt: null,
          requiresApproval: input.requiresApproval ?? false,
          approvedAt: null,
          runToken: null,
          createdAt: at,
          updatedAt: at,
        };
        const targets = newTargets(post.id, companyId, input.accountIds, at);
        await repo.insertPost(post, targets);
        if (when) {
          post.runToken = await enqueueTargets(post, when.runAt);
          await repo.updatePost(post.id, { runToken: post.runToken });
        }
        return { post: await view(post) };
      });
    },

    /**
     * PATCH: text, media, overrides, accountIds, requiresApproval of a post not yet publishing. The targets are
     * made anew. An edit of a post that requires approval withdraws the approval: a draft or scheduled post
     * goes back to pending_approval (a schedule is dropped, its jobs retired). A scheduled post that needs no
     * approval stays scheduled for the same time. A canceled or failed post becomes a draft again.
     */
    async updatePost({ companyId, companySlug, id, input }: { companyId: string; companySlug: string; id: string; input: typeof UpdatePostBody.static }) {
      return d.join(async () => {
        const post = await mustLock(companyId, id);
        if (LOCKED.has(post.status)) throw new AppError("SOCIAL_POST_NOT_EDITABLE", `A ${post.status} post cannot be changed`);
        const current = (await repo.targetsOf([post.id])).map((t) => t.accountId);
        const accountIds = input.accountIds ?? current;
        const overrides =
          input.overrides ??
          Object.fromEntries(
            Object.entries(post.overrides)
              .filter(([k]) => accountIds.includes(k))
              .map(([k, o]) => [k, { text: o.text, media: o.media?.map(asInput) }]),
          );
        const details = new DetailCollector();
        const content = await readContent(
          companyId,
          companySlug,
          { accountIds, text: input.text ?? post.text, media: input.media ?? post.media.map(asInput), overrides },
          details,
        );
        details.throwIfAny();
        enforceRules(companySlug, accountIds, content);

        const requiresApproval = input.requiresApproval ?? post.requiresApproval;
        // Any edit withdraws an approval: what was approved is not what will be published.
        const approvedAt = requiresApproval ? null : post.approvedAt;
        const at = now();
        const keepSchedule = post.status === "scheduled" && !requiresApproval && post.scheduledAt !== null;
        const status = keepSchedule ? "scheduled" : requiresApproval ? "pending_approval" : "draft";
        await repo.deleteTargetsOfPost(post.id);
        await repo.insertTargets(newTargets(post.id, companyId, accountIds, at));
        const patch: Partial<PostRow> = {
          ...content,
          requiresApproval,
          approvedAt,
          status,
          scheduledAt: keepSchedule ? post.scheduledAt : null,
          runToken: null,
          updatedAt: at,
        };
        await repo.updatePost(post.id, patch);
        if (keepSchedule) {
          const runAt = new Date(Math.max(post.scheduledAt!.getTime(), at.getTime()));
          await repo.updatePost(post.id, { runToken: await enqueueTargets({ ...post, ...patch }, runAt) });
        }
        return { post: await view((await repo.getPostById(post.id))!) };
      });
    },

    async getPost({ companyId, id }: { companyId: string; id: string }) {
      return { post: await view(await mustGet(companyId, id)) };
    },

    async listPosts(o: { companyId: string; limit: number; before?: string; status?: string; accountId?: string; from?: Date; to?: Date }) {
      const posts = await repo.listPosts(o);
      const targets = await repo.targetsOf(posts.map((p) => p.id));
      const byPost = Map.groupBy(targets, (t) => t.postId);
      const metrics = await repo.metricsOfTargets(targets);
      return { posts: posts.map((p) => postView(p, byPost.get(p.id) ?? [], metrics)) };
    },

    async schedulePost({ companyId, companySlug, id, input }: { companyId: string; companySlug: string; id: string; input: typeof SchedulePostBody.static }) {
      return d.join(async () => {
        const post = await mustLock(companyId, id);
        if (LOCKED.has(post.status)) throw new AppError("SOCIAL_POST_NOT_EDITABLE", `A ${post.status} post cannot be scheduled again`);
        const details = new DetailCollector();
        const when = readWhen(input, details);
        if (!when && details.empty) details.add("/scheduledAt", "give scheduledAt or publishNow: true");
        details.throwIfAny();
        if (post.requiresApproval && !post.approvedAt)
          throw new AppError("SOCIAL_APPROVAL_REQUIRED", "This post needs approval before it is scheduled or published (POST /social/posts/{id}/approve)");
        const targets = await repo.targetsOf([post.id]);
        requireConnected(
          companySlug,
          targets.map((t) => t.accountId),
          () => "path:id",
        );
        const token = await enqueueTargets(post, when!.runAt);
        await repo.updatePost(post.id, {
          status: when!.now ? "publishing" : "scheduled",
          scheduledAt: when!.now ? null : when!.runAt,
          runToken: token,
          updatedAt: now(),
        });
        return { post: await view((await repo.getPostById(post.id))!) };
      });
    },

    async cancelPost({ companyId, id }: { companyId: string; id: string }) {
      return d.join(async () => {
        const post = await mustLock(companyId, id);
        if (LOCKED.has(post.status)) throw new AppError("SOCIAL_POST_NOT_EDITABLE", `A ${post.status} post cannot be canceled`);
        if (post.status === "canceled" || post.status === "failed") throw new AppError("CONFLICT", `The post is already ${post.status}`);
        const at = now();
        await repo.updatePost(post.id, { status: "canceled", runToken: null, updatedAt: at });
        await repo.updateTargetsOfPost(post.id, { status: "canceled", updatedAt: at });
        return { post: await view((await repo.getPostById(post.id))!) };
      });
    },

    async approvePost({ companyId, id }: { companyId: string; id: string }) {
      return d.join(async () => {
        const post = await mustLock(companyId, id);
        if (LOCKED.has(post.status)) throw new AppError("SOCIAL_POST_NOT_EDITABLE", `A ${post.status} post cannot be changed`);
        const at = now();
        await repo.updatePost(post.id, {
          approvedAt: post.approvedAt ?? at,
          status: post.status === "pending_approval" ? "draft" : post.status,
          updatedAt: at,
        });
        return { post: await view((await repo.getPostById(post.id))!) };
      });
    },

    /**
     * Deletes the post. A published one is first removed from the platforms that allow it (Facebook, X);
     * the targets that stay on their platform are reported. NB! Platform calls: not inside a unit (routes call it outside idem.batch).
     */
    async deletePost({ companyId, id }: { companyId: string; id: string }) {
      const post = await mustGet(companyId, id);
      if (post.status === "publishing") throw new AppError("SOCIAL_POST_NOT_EDITABLE", "A post that is publishing cannot be deleted; wait until it settles");
      const notRemoved: { accountId: string; platform: "x"; externalId: string | null; reason: string }[] = [];
      for (const t of await repo.targetsOf([post.id])) {
        if (t.status !== "published" || !t.externalId) continue;
        const rt = runtime.get(t.accountId);
        const platform = t.platform as "x";
        if (!rt) {
          notRemoved.push({ accountId: t.accountId, platform, externalId: t.externalId, reason: "the account is no longer configured" });
          continue;
        }
        if (!PLATFORM_LIMITS[rt.account.platform].deletable || !rt.publisher.remove) {
          notRemoved.push({
            accountId: t.accountId,
            platform,
            externalId: t.externalId,
            reason: `${rt.account.platform} does not allow deleting posts through its API`,
          });
          continue;
        }
        try {
          await rt.publisher.remove(t.externalId);
        } catch (e) {
          notRemoved.push({ accountId: t.accountId, platform, externalId: t.externalId, reason: (e as Error).message });
        }
      }
      await d.unit(async () => repo.deletePost(post.id));
      return { id: post.id, notRemoved };
    },

    /** For media.usage: a not-yet-published post that will publish this media. */
    postUsingMedia: async (companyId: string, mediaId: string) => await repo.postUsingMedia(companyId, mediaId),
  };
}

export type SocialService = ReturnType<typeof createSocialService>;
