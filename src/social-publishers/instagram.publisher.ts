/**
 * Instagram (Graph API, Instagram Login or Facebook Login business accounts) content publishing:
 *
 *   GET  /{ig-user-id}/content_publishing_limit?fields=quota_usage,config   → 50 posts per 24 h
 *   POST /{ig-user-id}/media {image_url, caption} | {media_type:"REELS", video_url, caption}
 *        | children {image_url, is_carousel_item:true} then {media_type:"CAROUSEL", children, caption} → {id}
 *   GET  /{container-id}?fields=status_code      IN_PROGRESS → FINISHED (ERROR, EXPIRED, PUBLISHED)
 *   POST /{ig-user-id}/media_publish {creation_id}                          → {id} (the media id)
 *   GET  /{media-id}?fields=permalink
 *
 * Never twice: the container id is saved the moment it is returned and reused by a retry; before a retry
 * a container already PUBLISHED is looked up among the account's recent media (same caption, not older
 * than the first attempt). Instagram pulls media from URLs only (`uploads: false`): the engine hands uploaded
 * media over as signed public links (social.media-links.ts).
 */
import { Type } from "@sinclair/typebox";
import { graphRequest, graphUrl } from "../channels/meta/meta.http";
import {
  fromSendFailure,
  PublishError,
  sameText,
  settingsReader,
  type PlatformMediaItem,
  type PublishedPost,
  type PublisherDefinition,
  type PublishInput,
  type SocialPublisher,
} from "./publisher.types";

const instagramSettings = Type.Object(
  {
    ig_user_id: Type.String({ minLength: 1, description: "Instagram professional account id" }),
    access_token: Type.String({ minLength: 1, description: "token with instagram_content_publish (and instagram_manage_insights)" }),
    base_url: Type.String({ default: "https://graph.facebook.com/v23.0", description: "Graph host incl. version" }),
    /** Longest wait for a video container to finish processing within one attempt. */
    container_wait_ms: Type.Integer({ minimum: 0, default: 120_000 }),
    /** Longest wait for one Graph answer; past it the attempt is retried (the platform is asked first). */
    timeout_ms: Type.Integer({ minimum: 1, default: 60_000 }),
  },
  { additionalProperties: false },
);
type InstagramSettings = typeof instagramSettings.static;

const POLL_MS = 3000;
const MATCH_SLACK_MS = 60_000;

export const instagramPublisher: PublisherDefinition = {
  platforms: ["instagram"],
  uploads: false,
  readSettings: settingsReader<InstagramSettings>(instagramSettings),
  create(ctx): SocialPublisher {
    const s = ctx.account.settings as InstagramSettings;
    const url = (path: string, query?: Record<string, string | undefined>) => graphUrl({ baseUrl: s.base_url, path, query });
    async function call<T>(method: "GET" | "POST" | "DELETE", u: string, json?: unknown): Promise<T> {
      const r = await graphRequest<T>({ ctx, token: s.access_token, method, url: u, json, timeoutMs: s.timeout_ms });
      if (!r.ok) throw fromSendFailure(r.failure, ctx.now());
      return r.body;
    }

    async function permalink(id: string): Promise<string | null> {
      try {
        return (await call<{ permalink?: string }>("GET", url(id, { fields: "permalink" }))).permalink ?? null;
      } catch {
        return null; // the post exists; the link is a nicety
      }
    }

    async function findRecent(input: PublishInput): Promise<PublishedPost | null> {
      const list = await call<{ data?: { id: string; caption?: string; timestamp?: string; permalink?: string }[] }>(
        "GET",
        url(`${s.ig_user_id}/media`, { fields: "id,caption,timestamp,permalink", limit: "25" }),
      );
      const since = input.firstAttemptAt.getTime() - MATCH_SLACK_MS;
      const mine = (list.data ?? []).find((m) => sameText(m.caption ?? "", input.text) && (m.timestamp ? Date.parse(m.timestamp) >= since : false));
      return mine ? { externalId: mine.id, url: mine.permalink ?? null, publishedAt: new Date(mine.timestamp!) } : null;
    }

    async function containerStatus(id: string): Promise<string> {
      return (await call<{ status_code?: string }>("GET", url(id, { fields: "status_code" }))).status_code ?? "IN_PROGRESS";
    }

    async function createContainer(input: PublishInput): Promise<string> {
      const item = (m: PublishInput["media"][number], child: boolean) => {
        if (!m.url) throw new PublishError("MEDIA_INVALID", "Instagram pulls media from public URLs; this item has none", false);
        const base = m.kind === "video" ? { media_type: child ? "VIDEO" : "REELS", video_url: m.url } : { image_url: m.url };
        return child ? { ...base, is_carousel_item: true } : { ...base, caption: input.text };
      };
      if (input.media.length === 1) return (await call<{ id: string }>("POST", url(`${s.ig_user_id}/media`), item(input.media[0]!, false))).id;
      const children: string[] = [];
      for (const [i, m] of input.media.entries()) {
        const key = `child${i}`;
        children.push(input.progress[key] ?? (await call<{ id: string }>("POST", url(`${s.ig_user_id}/media`), item(m, true))).id);
        if (!input.progress[key]) await input.save({ [key]: children[i]! });
      }
      return (await call<{ id: string }>("POST", url(`${s.ig_user_id}/media`), { media_type: "CAROUSEL", children: children.join(","), caption: input.text }))
        .id;
    }

    return {
      async findExisting(input) {
        const container = input.progress.containerId;
        if (!container) return findRecent(input); // a crash before the container id was stored
        const status = await containerStatus(container);
        return status === "PUBLISHED" ? findRecent(input) : null;
      },

      async publish(input) {
        const limit = await call<{ data?: { quota_usage?: number; config?: { quota_total?: number; quota_duration?: number } }[] }>(
          "GET",
          url(`${s.ig_user_id}/content_publishing_limit`, { fields: "quota_usage,config" }),
        );
        const usage = limit.data?.[0];
        const total = usage?.config?.quota_total ?? 50;
        if ((usage?.quota_usage ?? 0) >= total)
          throw new PublishError("PUBLISHING_LIMIT_REACHED", `Instagram's limit of ${total} posts per 24 h is used up`, true, {
            retryAt: new Date(ctx.now().getTime() + 3_600_000),
          });

        let container: string | undefined = input.progress.containerId;
        if (container) {
          const status = await containerStatus(container);
          if (status === "ERROR" || status === "EXPIRED") container = undefined; // make a fresh one
        }
        if (!container) {
          container = await createContainer(input);
          await input.save({ containerId: container });
        }
        const deadline = ctx.now().getTime() + s.container_wait_ms;
        for (;;) {
          const status = await containerStatus(container);
          if (status === "FINISHED") break;
          if (status === "PUBLISHED") {
            const found = await findRecent(input);
            if (found) return found;
            break;
          }
          if (status === "ERROR") throw new PublishError("MEDIA_INVALID", "Instagram could not process the media (container status ERROR)", false);
          if (status === "EXPIRED") throw new PublishError("CONTAINER_EXPIRED", "the Instagram container expired before it was published", true);
          if (ctx.now().getTime() + POLL_MS > deadline) throw new PublishError("PROCESSING", "Instagram is still processing the media", true);
          await ctx.sleep(POLL_MS);
        }
        const published = await call<{ id: string }>("POST", url(`${s.ig_user_id}/media_publish`), { creation_id: container });
        await input.save({ externalId: published.id });
        return { externalId: published.id, url: await permalink(published.id), publishedAt: ctx.now() };
      },

      async analytics({ now }) {
        const profile = await call<{ username?: string; followers_count?: number }>("GET", url(s.ig_user_id, { fields: "username,followers_count" }));
        const followers = profile.followers_count ?? 0;
        const insights = await call<{ data?: { name: string; total_value?: { value?: number } }[] }>(
          "GET",
          url(`${s.ig_user_id}/insights`, { metric: "views,reach,total_interactions", period: "day", metric_type: "total_value" }),
        );
        const value = (name: string) => insights.data?.find((m) => m.name === name)?.total_value?.value ?? 0;
        const list = await call<{
          data?: { id: string; caption?: string; media_type?: string; permalink?: string; timestamp: string; like_count?: number; comments_count?: number }[];
        }>("GET", url(`${s.ig_user_id}/media`, { fields: "id,caption,media_type,permalink,timestamp,like_count,comments_count", limit: "25" }));
        const media: PlatformMediaItem[] = [];
        for (const m of list.data ?? []) {
          const mi = await call<{ data?: { name: string; values?: { value?: number }[] }[] }>(
            "GET",
            url(`${m.id}/insights`, { metric: "views,reach,shares" }),
          ).catch(() => ({ data: [] }));
          const metric = (name: string) => mi.data?.find((x) => x.name === name)?.values?.[0]?.value ?? 0;
          media.push({
            externalId: m.id,
            text: m.caption ?? "",
            mediaType: (m.media_type ?? "IMAGE").toLowerCase(),
            url: m.permalink ?? null,
            publishedAt: new Date(m.timestamp),
            views: metric("views"),
            reach: metric("reach"),
            likes: m.like_count ?? 0,
            comments: m.comments_count ?? 0,
            shares: metric("shares"),
          });
        }
        const date = now.toISOString().slice(0, 10);
        return {
          handle: profile.username ?? null,
          followers,
          days: [{ date, followers, views: value("views"), reach: value("reach"), engagements: value("total_interactions") }],
          media,
        };
      },
    };
  },
};
