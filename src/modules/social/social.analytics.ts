/**
 * Analytics: pulled from the platforms by a scheduled job into social_account_days and
 * social_platform_media, and read from there — never fetched on the request path.
 *
 * Besides the quarter-hourly pull of every account, one account is pulled by a durable job (`social.metrics`):
 * once shortly after a post is published there (so the post shows metrics within a minute), and at once on
 * POST /social/analytics/refresh. An account is pulled at most once per `refreshIntervalMs` by these jobs;
 * the time of its last pull is kept in the database, so the limit holds across restarts and instances.
 */
import type { Db } from "../../db/client";
import type { MetricsPullPayload } from "../../jobs";
import { AppError, notFound } from "../../platform/errors";
import type { Queue } from "../../jobs";
import type { Job, JobOutcome } from "../../platform/queue/queue";
import type { Logger } from "../../platform/logger";
import { PublishError, SOCIAL_PLATFORMS, type SocialPlatform } from "../../social-publishers/publisher.types";
import type { SocialAccountRuntime, SocialRuntime } from "./social.accounts";
import type { AnalyticsSummaryModel, PlatformAnalyticsModel, PlatformMediaModel, RefreshAnalyticsModel } from "./social.model";
import type { PlatformMediaRow, SocialRepository } from "./social.repository";

const DAY = 86_400_000;
const dateOf = (d: Date) => d.toISOString().slice(0, 10);

export const METRICS_JOB = "social.metrics";

export function mediaView(r: PlatformMediaRow): typeof PlatformMediaModel.static {
  return {
    accountId: r.accountId,
    platform: r.platform as "x",
    externalId: r.externalId,
    postId: r.postId,
    text: r.text,
    mediaType: r.mediaType,
    url: r.url,
    publishedAt: r.publishedAt.toISOString(),
    metrics: { views: r.views, reach: r.reach, likes: r.likes, comments: r.comments, shares: r.shares, engagements: r.engagements },
    syncedAt: r.syncedAt.toISOString(),
  };
}

export function createAnalytics({
  repo,
  unit,
  runtime,
  now,
  log,
  companyIdOf,
  queue,
  metricsDelayMs,
  refreshIntervalMs,
}: {
  repo: SocialRepository;
  /** The unit of work around the repository's writes (db.unit). */
  unit: Db["unit"];
  runtime: SocialRuntime;
  now: () => Date;
  log: Pick<Logger, "warn">;
  companyIdOf: (slug: string) => Promise<string | undefined>;
  queue: Pick<Queue, "enqueueJob">;
  /** How long after publishing a post's metrics are pulled ([social] metrics_after_publish_seconds). */
  metricsDelayMs: number;
  /** The least time between two pulls of one account by jobs and refreshes ([social] refresh_interval_seconds). */
  refreshIntervalMs: number;
}) {
  /** One account's pull: the platform's numbers into the tables. Errors mark the account, never throw. */
  async function syncAccount(rt: SocialAccountRuntime): Promise<boolean> {
    const companyId = await companyIdOf(rt.account.company);
    if (!companyId) return false;
    const at = now();
    // Counted when asked, not when answered: a failed pull cost the platform's quota too.
    await repo.markPulled(rt.account.id, at);
    const published = (await repo.publishedTargets(rt.account.id)).map((r) => ({
      externalId: r.target.externalId!,
      text: r.overrides[rt.account.id]?.text ?? r.text,
      publishedAt: r.target.publishedAt!,
      mediaType: (r.overrides[rt.account.id]?.media ?? r.media)[0]?.kind ?? "text",
    }));
    try {
      const snap = await rt.publisher.analytics({ now: at, published });
      const postIds = await repo.postIdByExternal(
        rt.account.id,
        snap.media.map((m) => m.externalId),
      );
      await unit(async () => {
        await repo.upsertDays(snap.days.map((d) => ({ ...d, accountId: rt.account.id, companyId, platform: rt.account.platform, syncedAt: at })));
        await repo.upsertMedia(
          snap.media.map((m) => ({
            accountId: rt.account.id,
            externalId: m.externalId,
            companyId,
            platform: rt.account.platform,
            postId: postIds.get(m.externalId) ?? null,
            text: m.text,
            mediaType: m.mediaType,
            url: m.url,
            publishedAt: m.publishedAt,
            views: m.views,
            reach: m.reach,
            likes: m.likes,
            comments: m.comments,
            shares: m.shares,
            engagements: m.likes + m.comments + m.shares,
            syncedAt: at,
          })),
        );
      });
      runtime.setHandle(rt.account.id, snap.handle);
      runtime.setStatus(rt.account.id, "connected");
      return true;
    } catch (e) {
      const accountError = e instanceof PublishError && e.opts.accountError;
      if (accountError) runtime.setStatus(rt.account.id, "error", (e as Error).message);
      log.warn({ accountId: rt.account.id, err: e }, "social analytics pull failed");
      return false;
    }
  }

  function range(q: { from?: string; to?: string }): { from: string; to: string } {
    const to = q.to ?? dateOf(now());
    const from = q.from ?? dateOf(new Date(Date.parse(`${to}T00:00:00Z`) - 29 * DAY));
    return { from, to };
  }
  const endOf = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + DAY);
  const startOf = (date: string) => new Date(`${date}T00:00:00Z`);

  /** When the account may be pulled again by a job or a refresh (null: now). */
  async function nextPullAt(accountId: string): Promise<Date | null> {
    const last = await repo.lastPullAt(accountId);
    const next = last ? last.getTime() + refreshIntervalMs : 0;
    return next > now().getTime() ? new Date(next) : null;
  }

  /** The `social.metrics` job: pull the account, unless a pull since `after` covered it; wait out the interval. */
  async function handlePull(job: Job<MetricsPullPayload>): Promise<JobOutcome> {
    const rt = runtime.get(job.payload.accountId);
    if (!rt) return; // gone from the config
    if (job.payload.after !== undefined) {
      const last = await repo.lastPullAt(rt.account.id);
      // NB! A pull that was attempted and failed counts too (the account is marked, it is logged): the post's
      // metrics then come with the next pull that succeeds, as before this job existed.
      if (last && last.getTime() >= job.payload.after) return;
      const wait = await nextPullAt(rt.account.id);
      // Several posts published together: one pull a minute serves them all.
      if (wait) return { retryAt: wait, countAttempt: false };
    }
    await syncAccount(rt);
  }

  return {
    syncAccount,
    handlePull,

    /**
     * A target was published: its account is pulled once `metricsDelayMs` later (platforms count the first
     * views within seconds). Inside the transaction that publishes the target (outbox).
     */
    async pullAfterPublish(accountId: string, publishedAt: Date): Promise<void> {
      const after = Math.max(publishedAt.getTime(), now().getTime()) + metricsDelayMs;
      await queue.enqueueJob({ type: METRICS_JOB, payload: { accountId, after }, runAt: new Date(after), groupKey: accountId });
    },

    /**
     * POST /social/analytics/refresh: queues a pull now of each asked account not pulled within the interval;
     * 429 RATE_LIMITED (Retry-After) when none can be. Inside the request's transaction: the account's pull
     * time is taken with the job, so a second refresh in the window is refused.
     * NB! On PostgreSQL two instances answering refreshes of one account in the same instant may both queue
     * a pull (read, then write): the platform sees two calls, never more.
     */
    async refresh({
      companyId,
      companySlug,
      postId,
      accountId,
    }: {
      companyId: string;
      companySlug: string;
      postId?: string;
      accountId?: string;
    }): Promise<typeof RefreshAnalyticsModel.static> {
      const own = new Map(runtime.forCompany(companySlug).map((a) => [a.account.id, a]));
      let ids: string[];
      if (postId) {
        if (!(await repo.getPost(companyId, postId))) throw notFound("Social post");
        ids = (await repo.targetsOf([postId])).filter((t) => t.status === "published").map((t) => t.accountId);
      } else if (accountId) {
        if (!own.has(accountId)) throw notFound("Social account");
        ids = [accountId];
      } else ids = await repo.accountsWithPublished(companyId);
      const out: typeof RefreshAnalyticsModel.static = { queued: [], rateLimited: [] };
      const at = now();
      for (const id of ids) {
        const rt = own.get(id);
        if (!rt) continue; // removed from the config since it published
        const wait = await nextPullAt(id);
        if (wait) {
          out.rateLimited.push({ accountId: id, platform: rt.account.platform, retryAt: wait.toISOString() });
          continue;
        }
        await repo.markPulled(id, at);
        await queue.enqueueJob({ type: METRICS_JOB, payload: { accountId: id }, runAt: at, groupKey: id });
        out.queued.push({ accountId: id, platform: rt.account.platform });
      }
      if (!out.queued.length && out.rateLimited.length) {
        const first = Math.min(...out.rateLimited.map((r) => Date.parse(r.retryAt)));
        const seconds = Math.max(1, Math.ceil((first - at.getTime()) / 1000));
        throw new AppError("RATE_LIMITED", `Analytics of this account were pulled less than ${refreshIntervalMs / 1000} s ago; ask again in ${seconds} s`, [], {
          "Retry-After": String(seconds),
        });
      }
      return out;
    },
    async syncAll(): Promise<void> {
      for (const rt of runtime.all()) await syncAccount(rt);
    },

    async summary({
      companyId,
      companySlug,
      query,
    }: {
      companyId: string;
      companySlug: string;
      query: { from?: string; to?: string };
    }): Promise<typeof AnalyticsSummaryModel.static> {
      const { from, to } = range(query);
      const accounts = runtime.forCompany(companySlug);
      const ids = accounts.map((a) => a.account.id);
      const days = await repo.days({ companyId, accountIds: ids, from, to });
      const followers = (await repo.latestFollowers(companyId, to)).filter((f) => ids.includes(f.accountId));
      const media = await repo.mediaInRange({ companyId, accountIds: ids, from: startOf(from), to: endOf(to) });
      const platforms = SOCIAL_PLATFORMS.filter((p) => accounts.some((a) => a.account.platform === p)).map((platform) => {
        const d = days.filter((x) => x.platform === platform);
        const views = d.reduce((s, x) => s + x.views, 0);
        const reach = d.reduce((s, x) => s + x.reach, 0);
        const engagements = d.reduce((s, x) => s + x.engagements, 0);
        return {
          platform,
          accounts: accounts.filter((a) => a.account.platform === platform).length,
          followers: followers.filter((f) => f.platform === platform).reduce((s, f) => s + f.followers, 0),
          posts: media.filter((m) => m.platform === platform).length,
          views,
          reach,
          engagements,
          engagementRate: reach > 0 ? Math.round((engagements / reach) * 10_000) / 10_000 : 0,
        };
      });
      return { from, to, platforms };
    },

    async platform({
      companyId,
      companySlug,
      platform,
      query,
    }: {
      companyId: string;
      companySlug: string;
      platform: string;
      query: { from?: string; to?: string; accountId?: string };
    }): Promise<typeof PlatformAnalyticsModel.static> {
      if (!(SOCIAL_PLATFORMS as readonly string[]).includes(platform)) throw notFound(`Platform ${platform}`);
      const { from, to } = range(query);
      let ids = runtime
        .forCompany(companySlug)
        .filter((a) => a.account.platform === platform)
        .map((a) => a.account.id);
      if (query.accountId) {
        if (!ids.includes(query.accountId)) throw notFound(`Social account ${query.accountId} on ${platform}`);
        ids = [query.accountId];
      }
      const byDate = new Map<string, { date: string; followers: number; views: number; reach: number; engagements: number }>();
      for (const d of await repo.days({ companyId, platform, accountIds: ids, from, to })) {
        const row = byDate.get(d.date) ?? { date: d.date, followers: 0, views: 0, reach: 0, engagements: 0 };
        row.followers += d.followers;
        row.views += d.views;
        row.reach += d.reach;
        row.engagements += d.engagements;
        byDate.set(d.date, row);
      }
      const topPosts = (
        await repo.mediaInRange({ companyId, platform, accountIds: ids, from: startOf(from), to: endOf(to), orderByEngagement: true, limit: 10 })
      ).map(mediaView);
      return { platform: platform as SocialPlatform, from, to, series: [...byDate.values()], topPosts };
    },

    async listMedia({
      companySlug,
      companyId,
      accountId,
      limit,
      after,
    }: {
      companySlug: string;
      companyId: string;
      accountId?: string;
      limit: number;
      after?: [number, string, string];
    }) {
      let ids = runtime.forCompany(companySlug).map((a) => a.account.id);
      if (accountId) {
        if (!ids.includes(accountId)) throw notFound("Social account");
        ids = [accountId];
      }
      return { media: await repo.listMedia({ companyId, accountIds: ids, limit, after }) };
    },
  };
}
