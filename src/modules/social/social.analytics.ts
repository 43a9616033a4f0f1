/**
 * Analytics: pulled from the platforms by a scheduled job into social_account_days and
 * social_platform_media, and read from there — never fetched on the request path.
 */
import type { Db } from "../../db/client";
import { notFound } from "../../platform/errors";
import type { Logger } from "../../platform/logger";
import { PublishError, SOCIAL_PLATFORMS, type SocialPlatform } from "../../social-publishers/publisher.types";
import type { SocialAccountRuntime, SocialRuntime } from "./social.accounts";
import type { AnalyticsSummaryModel, PlatformAnalyticsModel, PlatformMediaModel } from "./social.model";
import type { PlatformMediaRow, SocialRepository } from "./social.repository";

const DAY = 86_400_000;
const dateOf = (d: Date) => d.toISOString().slice(0, 10);

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

export function createAnalytics({ repo, tx, runtime, now, log, companyIdOf }: { repo: SocialRepository; tx: Db["tx"]; runtime: SocialRuntime; now: () => Date; log: Pick<Logger, "warn">; companyIdOf: (slug: string) => string | undefined }) {
  /** One account's pull: the platform's numbers into the tables. Errors mark the account, never throw. */
  async function syncAccount(rt: SocialAccountRuntime): Promise<boolean> {
    const companyId = companyIdOf(rt.account.company);
    if (!companyId) return false;
    const at = now();
    const published = repo.publishedTargets(rt.account.id).map((r) => ({
      externalId: r.target.externalId!,
      text: r.overrides[rt.account.id]?.text ?? r.text,
      publishedAt: r.target.publishedAt!,
      mediaType: (r.overrides[rt.account.id]?.media ?? r.media)[0]?.kind ?? "text",
    }));
    try {
      const snap = await rt.publisher.analytics({ now: at, published });
      const postIds = repo.postIdByExternal(rt.account.id, snap.media.map((m) => m.externalId));
      tx(() => {
        repo.upsertDays(snap.days.map((d) => ({ ...d, accountId: rt.account.id, companyId, platform: rt.account.platform, syncedAt: at })));
        repo.upsertMedia(
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

  return {
    syncAccount,
    async syncAll(): Promise<void> {
      for (const rt of runtime.all()) await syncAccount(rt);
    },

    summary({ companyId, companySlug, query }: { companyId: string; companySlug: string; query: { from?: string; to?: string } }): typeof AnalyticsSummaryModel.static {
      const { from, to } = range(query);
      const accounts = runtime.forCompany(companySlug);
      const ids = accounts.map((a) => a.account.id);
      const days = repo.days({ companyId, accountIds: ids, from, to });
      const followers = repo.latestFollowers(companyId, to).filter((f) => ids.includes(f.accountId));
      const media = repo.mediaInRange({ companyId, accountIds: ids, from: startOf(from), to: endOf(to) });
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

    platform({ companyId, companySlug, platform, query }: { companyId: string; companySlug: string; platform: string; query: { from?: string; to?: string; accountId?: string } }): typeof PlatformAnalyticsModel.static {
      if (!(SOCIAL_PLATFORMS as readonly string[]).includes(platform)) throw notFound(`Platform ${platform}`);
      const { from, to } = range(query);
      let ids = runtime.forCompany(companySlug).filter((a) => a.account.platform === platform).map((a) => a.account.id);
      if (query.accountId) {
        if (!ids.includes(query.accountId)) throw notFound(`Social account ${query.accountId} on ${platform}`);
        ids = [query.accountId];
      }
      const byDate = new Map<string, { date: string; followers: number; views: number; reach: number; engagements: number }>();
      for (const d of repo.days({ companyId, platform, accountIds: ids, from, to })) {
        const row = byDate.get(d.date) ?? { date: d.date, followers: 0, views: 0, reach: 0, engagements: 0 };
        row.followers += d.followers;
        row.views += d.views;
        row.reach += d.reach;
        row.engagements += d.engagements;
        byDate.set(d.date, row);
      }
      const topPosts = repo.mediaInRange({ companyId, platform, accountIds: ids, from: startOf(from), to: endOf(to), orderByEngagement: true, limit: 10 }).map(mediaView);
      return { platform: platform as SocialPlatform, from, to, series: [...byDate.values()], topPosts };
    },

    listMedia({ companySlug, companyId, accountId, limit, after }: { companySlug: string; companyId: string; accountId?: string; limit: number; after?: [number, string, string] }) {
      let ids = runtime.forCompany(companySlug).map((a) => a.account.id);
      if (accountId) {
        if (!ids.includes(accountId)) throw notFound("Social account");
        ids = [accountId];
      }
      return { media: repo.listMedia({ companyId, accountIds: ids, limit, after }) };
    },
  };
}
