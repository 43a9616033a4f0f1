/**
 * TikTok Content Posting API (open.tiktokapis.com, `Authorization: Bearer`, JSON; every answer carries
 * `error: {code, message, log_id}` with code "ok" on success):
 *
 *   POST /v2/post/publish/creator_info/query/   → privacy_level_options, max_video_post_duration_sec …
 *   POST /v2/post/publish/video/init/ {post_info:{title, privacy_level, …}, source_info}
 *        PULL_FROM_URL {video_url} | FILE_UPLOAD {video_size, chunk_size, total_chunk_count} → {publish_id, upload_url?}
 *   PUT  {upload_url} chunks, Content-Range: bytes first-last/total (FILE_UPLOAD)
 *   POST /v2/post/publish/status/fetch/ {publish_id} → PROCESSING_UPLOAD|PROCESSING_DOWNLOAD|SEND_TO_USER_INBOX|PUBLISH_COMPLETE|FAILED
 *   metrics: GET /v2/user/info/?fields=…, POST /v2/video/list/?fields=…
 *
 * Never twice: the publish_id is saved the moment init returns it; a retry asks status/fetch about it and
 * publishes again only when TikTok says that attempt FAILED.
 */
import { Type } from "@sinclair/typebox";
import {
  callJson,
  daysFromMedia,
  PublishError,
  sameText,
  settingsReader,
  type PlatformMediaItem,
  type PublishedPost,
  type PublisherDefinition,
  type SocialPublisher,
} from "./publisher.types";

const tiktokSettings = Type.Object(
  {
    access_token: Type.String({ minLength: 1, description: "user access token with video.publish (and video.list, user.info.stats for analytics)" }),
    privacy_level: Type.String({ default: "PUBLIC_TO_EVERYONE", description: "used when the creator allows it, else the first option TikTok offers" }),
    base_url: Type.String({ default: "https://open.tiktokapis.com" }),
    /** Longest wait for TikTok to process a video within one attempt. */
    processing_wait_ms: Type.Integer({ minimum: 0, default: 120_000 }),
    /** Longest wait for one API answer; past it the attempt is retried (the platform is asked first). */
    timeout_ms: Type.Integer({ minimum: 1, default: 60_000 }),
  },
  { additionalProperties: false },
);
type TiktokSettings = typeof tiktokSettings.static;

const POLL_MS = 3000;
/** Chunk size for FILE_UPLOAD (TikTok: 5-64 MB chunks, the last may be up to 128 MB; under 64 MB one chunk). */
const CHUNK = 10 * 1024 * 1024;
const SINGLE_MAX = 64 * 1024 * 1024;

export function tiktokChunks(size: number): { chunkSize: number; count: number } {
  if (size <= SINGLE_MAX) return { chunkSize: size, count: 1 };
  return { chunkSize: CHUNK, count: Math.floor(size / CHUNK) }; // the remainder rides on the last chunk
}

export const tiktokPublisher: PublisherDefinition = {
  platforms: ["tiktok"],
  uploads: true,
  readSettings: settingsReader<TiktokSettings>(tiktokSettings),
  create(ctx): SocialPublisher {
    const s = ctx.account.settings as TiktokSettings;
    const base = s.base_url.replace(/\/+$/, "");

    async function call<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
      const r = await callJson(
        ctx,
        `${base}${path}`,
        {
          method,
          headers: { authorization: `Bearer ${s.access_token}`, "content-type": "application/json; charset=UTF-8" },
          body: body === undefined ? undefined : JSON.stringify(body),
        },
        "TikTok",
        { bigIntegersAsStrings: true, timeoutMs: s.timeout_ms },
      );
      const code: string = r.body?.error?.code ?? (r.status >= 400 ? `http_${r.status}` : "ok");
      if (code === "ok" && r.status < 400) return r.body?.data as T;
      const message = `${code}: ${r.body?.error?.message || `HTTP ${r.status}`}`;
      if (code === "access_token_invalid" || r.status === 401) throw new PublishError("AUTH_FAILED", message, false, { accountError: true });
      // A missing scope refuses one kind of call (e.g. video.list for analytics), not the account as a whole.
      if (code === "scope_not_authorized") throw new PublishError("SCOPE_MISSING", message, false);
      if (code === "rate_limit_exceeded" || r.status === 429)
        throw new PublishError("RATE_LIMITED", message, true, { retryAt: new Date(ctx.now().getTime() + 60_000) });
      if (code === "spam_risk_too_many_posts" || code === "spam_risk_user_banned_from_posting" || code === "reached_active_user_cap")
        throw new PublishError("PUBLISHING_LIMIT_REACHED", message, true, { retryAt: new Date(ctx.now().getTime() + 3_600_000) });
      if (r.status >= 500) throw new PublishError("PROVIDER_UNAVAILABLE", message, true);
      throw new PublishError("PROVIDER_REJECTED", message, false);
    }

    /** Polls status/fetch until TikTok settles; null when the attempt FAILED on TikTok's side. */
    async function settle(publishId: string, save: (p: Record<string, string>) => void): Promise<PublishedPost | { failed: string }> {
      const deadline = ctx.now().getTime() + s.processing_wait_ms;
      for (;;) {
        const st = await call<{ status?: string; fail_reason?: string; publicaly_available_post_id?: (string | number)[] }>(
          "POST",
          "/v2/post/publish/status/fetch/",
          { publish_id: publishId },
        );
        if (st.status === "PUBLISH_COMPLETE" || st.status === "SEND_TO_USER_INBOX") {
          // Private or inbox posts have no public id: the publish id then stands for the post.
          const postId = st.publicaly_available_post_id?.[0] !== undefined ? String(st.publicaly_available_post_id[0]) : publishId;
          await save({ externalId: postId });
          return { externalId: postId, url: postId === publishId ? null : `https://www.tiktok.com/video/${postId}`, publishedAt: ctx.now() };
        }
        if (st.status === "FAILED") return { failed: st.fail_reason ?? "unknown" };
        if (ctx.now().getTime() + POLL_MS > deadline) throw new PublishError("PROCESSING", `TikTok is still processing the video (${st.status ?? "?"})`, true);
        await ctx.sleep(POLL_MS);
      }
    }

    return {
      async findExisting(input) {
        const publishId = input.progress.publishId;
        if (publishId) {
          const r = await settle(publishId, input.save);
          return "failed" in r ? null : r;
        }
        // init's answer was lost (or never came): look for our caption among the creator's videos since the
        // first attempt. NB! A video still processing is not listed yet; TikTok offers no other lookup.
        const since = Math.floor((input.firstAttemptAt.getTime() - 60_000) / 1000);
        try {
          const list = await call<{ videos?: { id: string; video_description?: string; title?: string; create_time: number; share_url?: string }[] }>(
            "POST",
            "/v2/video/list/?fields=id,title,video_description,create_time,share_url",
            { max_count: 20 },
          );
          const mine = (list.videos ?? []).find((v) => v.create_time >= since && sameText(v.video_description ?? v.title ?? "", input.text));
          return mine
            ? { externalId: String(mine.id), url: mine.share_url ?? `https://www.tiktok.com/video/${mine.id}`, publishedAt: new Date(mine.create_time * 1000) }
            : null;
        } catch (e) {
          if (e instanceof PublishError && e.code === "SCOPE_MISSING") return null; // cannot look: publish again
          throw e;
        }
      },

      async publish(input) {
        const video = input.media[0];
        if (video?.kind !== "video") throw new PublishError("MEDIA_INVALID", "TikTok needs one video", false);
        const creator = await call<{ privacy_level_options?: string[]; comment_disabled?: boolean; duet_disabled?: boolean; stitch_disabled?: boolean }>(
          "POST",
          "/v2/post/publish/creator_info/query/",
        );
        const options = creator.privacy_level_options ?? [];
        const privacy = options.includes(s.privacy_level) ? s.privacy_level : (options[0] ?? s.privacy_level);
        const postInfo = {
          title: input.text,
          privacy_level: privacy,
          disable_comment: creator.comment_disabled ?? false,
          disable_duet: creator.duet_disabled ?? false,
          disable_stitch: creator.stitch_disabled ?? false,
        };
        let file: Blob | undefined;
        let sourceInfo: Record<string, unknown>;
        if (video.url) sourceInfo = { source: "PULL_FROM_URL", video_url: video.url };
        else {
          file = Bun.file(video.file!.path, { type: video.file!.mimeType });
          const { chunkSize, count } = tiktokChunks(file.size);
          sourceInfo = { source: "FILE_UPLOAD", video_size: file.size, chunk_size: chunkSize, total_chunk_count: count };
        }
        const init = await call<{ publish_id: string; upload_url?: string }>("POST", "/v2/post/publish/video/init/", {
          post_info: postInfo,
          source_info: sourceInfo,
        });
        await input.save({ publishId: init.publish_id });
        if (file) {
          if (!init.upload_url) throw new PublishError("PROVIDER_UNAVAILABLE", "TikTok gave no upload_url for FILE_UPLOAD", true);
          const { chunkSize, count } = tiktokChunks(file.size);
          for (let i = 0; i < count; i++) {
            const first = i * chunkSize;
            const last = i === count - 1 ? file.size - 1 : first + chunkSize - 1;
            const part = file.slice(first, last + 1);
            let res: Response;
            try {
              res = await ctx.fetch(init.upload_url, {
                method: "PUT",
                headers: {
                  "content-type": video.file!.mimeType,
                  "content-length": String(last - first + 1),
                  "content-range": `bytes ${first}-${last}/${file.size}`,
                },
                body: part,
                signal: AbortSignal.timeout(Math.max(s.timeout_ms, 600_000)),
              });
            } catch (e) {
              throw new PublishError("PLATFORM_UNREACHABLE", `TikTok upload unreachable: ${(e as Error).message}`, true);
            }
            if (!res.ok && res.status !== 206) throw new PublishError("PROVIDER_UNAVAILABLE", `TikTok upload answered HTTP ${res.status}`, res.status >= 500);
          }
        }
        const r = await settle(init.publish_id, input.save);
        if ("failed" in r) throw new PublishError("PROVIDER_REJECTED", `TikTok could not publish the video: ${r.failed}`, false);
        return r;
      },

      async analytics({ now }) {
        const info = await call<{ user?: { username?: string; display_name?: string; follower_count?: number } }>(
          "GET",
          "/v2/user/info/?fields=username,display_name,follower_count",
        );
        const followers = info.user?.follower_count ?? 0;
        const list = await call<{
          videos?: {
            id: string;
            title?: string;
            video_description?: string;
            create_time: number;
            share_url?: string;
            view_count?: number;
            like_count?: number;
            comment_count?: number;
            share_count?: number;
          }[];
        }>("POST", "/v2/video/list/?fields=id,title,video_description,create_time,share_url,view_count,like_count,comment_count,share_count", {
          max_count: 20,
        });
        const media: PlatformMediaItem[] = (list.videos ?? []).map((v) => ({
          externalId: v.id,
          text: v.video_description ?? v.title ?? "",
          mediaType: "video",
          url: v.share_url ?? null,
          publishedAt: new Date(v.create_time * 1000),
          views: v.view_count ?? 0,
          reach: v.view_count ?? 0,
          likes: v.like_count ?? 0,
          comments: v.comment_count ?? 0,
          shares: v.share_count ?? 0,
        }));
        return { handle: info.user?.username ?? info.user?.display_name ?? null, followers, days: daysFromMedia(media, followers, now), media };
      },
    };
  },
};
