/**
 * X (API v2, user context) posts. Reuses the channel's helpers: OAuth 1.0a / 2.0 signing and error mapping
 * (src/channels/x/x.http.ts) and the chunked media upload (x.media.ts) with the tweet media categories.
 *
 *   media          POST /2/media/upload/initialize → /{id}/append (chunks) → /{id}/finalize (→ STATUS)
 *   post           POST /2/tweets {text, media:{media_ids}}                        → 201 {data:{id,text}}
 *   before a retry GET /2/users/{id}/tweets?start_time=…&tweet.fields=created_at   (our text, not older than the first attempt)
 *   delete         DELETE /2/tweets/{id}                                           → {data:{deleted:true}}
 *   metrics        GET /2/users/{id}?user.fields=public_metrics, GET /2/users/{id}/tweets?tweet.fields=public_metrics,created_at
 *
 * Uploaded media ids are saved, but X expires them (expires_after_secs): a retry uploads again when the
 * post itself was never made, which is harmless (an unused upload is not a post).
 */
import { uploadXMedia } from "../channels/x/x.media";
import { xCall } from "../channels/x/x.http";
import { readXSettings, xSettings, type XAuthMode, type XSettings } from "../channels/x/x.settings";
import {
  daysFromMedia,
  fromSendFailure,
  PublishError,
  sameText,
  settingsReader,
  type PlatformMediaItem,
  type PublisherDefinition,
  type SocialPublisher,
} from "./publisher.types";

const MATCH_SLACK_MS = 60_000;
const tweetCategory = (mime: string) => (mime.startsWith("video/") ? "tweet_video" : mime === "image/gif" ? "tweet_gif" : "tweet_image");

interface Tweet {
  id: string;
  text: string;
  created_at?: string;
  public_metrics?: {
    retweet_count?: number;
    reply_count?: number;
    like_count?: number;
    quote_count?: number;
    bookmark_count?: number;
    impression_count?: number;
  };
}

export const xPublisher: PublisherDefinition = {
  platforms: ["x"],
  uploads: true,
  readSettings(raw) {
    const settings = settingsReader<XSettings>(xSettings)(raw);
    readXSettings(settings, "social account"); // throws when neither auth mode is complete
    return settings;
  },
  create(ctx): SocialPublisher {
    const { settings, auth } = readXSettings(ctx.account.settings, ctx.account.id) as { settings: XSettings; auth: XAuthMode };
    const base = settings.base_url.replace(/\/+$/, "");
    async function call<T>(method: string, url: string, body?: unknown): Promise<T | undefined> {
      const r = await xCall<T>({ ctx, settings, auth, method, url, body: body === undefined ? undefined : JSON.stringify(body) });
      if (!r.ok) throw fromSendFailure(r, ctx.now());
      return r.data;
    }
    const tweetUrl = (id: string) => `https://x.com/i/web/status/${id}`;

    return {
      async findExisting(input) {
        const start = new Date(input.firstAttemptAt.getTime() - MATCH_SLACK_MS).toISOString().replace(/\.\d{3}Z$/, "Z");
        const list = await call<{ data?: Tweet[] }>(
          "GET",
          `${base}/2/users/${settings.user_id}/tweets?max_results=10&tweet.fields=created_at&start_time=${encodeURIComponent(start)}`,
        );
        const mine = (list?.data ?? []).find((t) => sameText(t.text, input.text));
        return mine ? { externalId: mine.id, url: tweetUrl(mine.id), publishedAt: mine.created_at ? new Date(mine.created_at) : ctx.now() } : null;
      },

      async publish(input) {
        const mediaIds: string[] = [];
        for (const m of input.media) {
          const up = await uploadXMedia({ ctx, settings, auth, media: { url: m.url, file: m.file }, sleep: ctx.sleep, categoryOf: tweetCategory });
          if (!up.ok) throw fromSendFailure(up, ctx.now());
          mediaIds.push(up.mediaId);
        }
        const created = await call<{ data?: { id?: string } }>("POST", `${base}/2/tweets`, {
          text: input.text,
          ...(mediaIds.length ? { media: { media_ids: mediaIds } } : {}),
        });
        const id = created?.data?.id;
        if (!id) throw new PublishError("PROVIDER_UNAVAILABLE", "X answered the post without an id", true);
        await input.save({ externalId: id });
        return { externalId: id, url: tweetUrl(id), publishedAt: ctx.now() };
      },

      async remove(externalId) {
        await call("DELETE", `${base}/2/tweets/${encodeURIComponent(externalId)}`);
      },

      async analytics({ now }) {
        const user = await call<{ data?: { username?: string; public_metrics?: { followers_count?: number } } }>(
          "GET",
          `${base}/2/users/${settings.user_id}?user.fields=public_metrics`,
        );
        const followers = user?.data?.public_metrics?.followers_count ?? 0;
        const tweets = await call<{ data?: Tweet[] }>(
          "GET",
          `${base}/2/users/${settings.user_id}/tweets?max_results=50&tweet.fields=public_metrics,created_at`,
        );
        const media: PlatformMediaItem[] = (tweets?.data ?? []).map((t) => ({
          externalId: t.id,
          text: t.text,
          mediaType: "post",
          url: tweetUrl(t.id),
          publishedAt: t.created_at ? new Date(t.created_at) : now,
          views: t.public_metrics?.impression_count ?? 0,
          reach: t.public_metrics?.impression_count ?? 0,
          likes: t.public_metrics?.like_count ?? 0,
          comments: t.public_metrics?.reply_count ?? 0,
          shares: (t.public_metrics?.retweet_count ?? 0) + (t.public_metrics?.quote_count ?? 0),
        }));
        return { handle: user?.data?.username ?? null, followers, days: daysFromMedia(media, followers, now), media };
      },
    };
  },
};
