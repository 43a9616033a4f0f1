/**
 * Facebook Page publishing (Graph API, Page access token):
 *
 *   text (and links)  POST /{page-id}/feed {message}                                  → {id: "<page>_<post>"}
 *   one image         POST /{page-id}/photos {url | multipart source, caption, published:true} → {id, post_id}
 *   several images    POST /{page-id}/photos {…, published:false} each → {id}; then
 *                     POST /{page-id}/feed {message, attached_media:[{media_fbid}]}   → {id}
 *   delete            DELETE /{post-id}                                                → {success:true}
 *   before a retry    GET /{page-id}/published_posts?fields=id,message,created_time,permalink_url&since=…
 *
 * Unpublished photo ids are saved as they come back, so a retry attaches them instead of uploading again.
 */
import { Type } from "@sinclair/typebox";
import { graphRequest, graphUrl } from "../channels/meta/meta.http";
import {
  daysFromMedia,
  fromSendFailure,
  PublishError,
  sameText,
  settingsReader,
  type PlatformMediaItem,
  type PublisherDefinition,
  type PublishInput,
  type SocialPublisher,
} from "./publisher.types";

const facebookSettings = Type.Object(
  {
    page_id: Type.String({ minLength: 1 }),
    page_access_token: Type.String({ minLength: 1, description: "Page token with pages_manage_posts, pages_read_engagement" }),
    base_url: Type.String({ default: "https://graph.facebook.com/v23.0" }),
    /** Longest wait for one Graph answer (photo uploads included); past it the attempt is retried. */
    timeout_ms: Type.Integer({ minimum: 1, default: 120_000 }),
  },
  { additionalProperties: false },
);
type FacebookSettings = typeof facebookSettings.static;

const MATCH_SLACK_MS = 60_000;

export const facebookPublisher: PublisherDefinition = {
  platforms: ["facebook"],
  uploads: true,
  readSettings: settingsReader<FacebookSettings>(facebookSettings),
  create(ctx): SocialPublisher {
    const s = ctx.account.settings as FacebookSettings;
    const url = (path: string, query?: Record<string, string | undefined>) => graphUrl({ baseUrl: s.base_url, path, query });
    async function call<T>(method: "GET" | "POST" | "DELETE", u: string, body?: unknown | FormData): Promise<T> {
      const r = await graphRequest<T>({
        ctx,
        token: s.page_access_token,
        method,
        url: u,
        timeoutMs: s.timeout_ms,
        ...(body instanceof FormData ? { form: body } : { json: body }),
      });
      if (!r.ok) throw fromSendFailure(r.failure, ctx.now());
      return r.body;
    }
    const postUrl = (id: string) => {
      const [page, post] = id.split("_");
      return post ? `https://www.facebook.com/${page}/posts/${post}` : `https://www.facebook.com/${id}`;
    };

    async function photo(m: PublishInput["media"][number], fields: Record<string, string>): Promise<{ id: string; post_id?: string }> {
      if (m.kind !== "image") throw new PublishError("MEDIA_INVALID", "Facebook posts from Switchboard take images only", false);
      if (m.url) return call("POST", url(`${s.page_id}/photos`), { url: m.url, ...fields });
      const form = new FormData();
      form.append("source", Bun.file(m.file!.path, { type: m.file!.mimeType }), m.file!.filename);
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      return call("POST", url(`${s.page_id}/photos`), form);
    }

    return {
      async findExisting(input) {
        const since = Math.floor((input.firstAttemptAt.getTime() - MATCH_SLACK_MS) / 1000);
        const list = await call<{ data?: { id: string; message?: string; created_time?: string; permalink_url?: string }[] }>(
          "GET",
          url(`${s.page_id}/published_posts`, { fields: "id,message,created_time,permalink_url", since: String(since), limit: "25" }),
        );
        const mine = (list.data ?? []).find((p) => sameText(p.message ?? "", input.text));
        return mine
          ? { externalId: mine.id, url: mine.permalink_url ?? postUrl(mine.id), publishedAt: mine.created_time ? new Date(mine.created_time) : ctx.now() }
          : null;
      },

      async publish(input) {
        let id: string;
        if (input.media.length === 0) {
          id = (await call<{ id: string }>("POST", url(`${s.page_id}/feed`), { message: input.text })).id;
        } else if (input.media.length === 1) {
          const r = await photo(input.media[0]!, { caption: input.text, published: "true" });
          id = r.post_id ?? r.id;
        } else {
          const ids: string[] = [];
          for (const [i, m] of input.media.entries()) {
            const key = `photo${i}`;
            const existing = input.progress[key];
            const photoId = existing ?? (await photo(m, { published: "false" })).id;
            if (!existing) await input.save({ [key]: photoId });
            ids.push(photoId);
          }
          id = (
            await call<{ id: string }>("POST", url(`${s.page_id}/feed`), { message: input.text, attached_media: ids.map((media_fbid) => ({ media_fbid })) })
          ).id;
        }
        await input.save({ externalId: id });
        return { externalId: id, url: postUrl(id), publishedAt: ctx.now() };
      },

      async remove(externalId) {
        await call("DELETE", url(externalId));
      },

      async analytics({ now }) {
        const page = await call<{ username?: string; name?: string; followers_count?: number; fan_count?: number }>(
          "GET",
          url(s.page_id, { fields: "name,username,followers_count,fan_count" }),
        );
        const followers = page.followers_count ?? page.fan_count ?? 0;
        const posts = await call<{
          data?: {
            id: string;
            message?: string;
            created_time: string;
            permalink_url?: string;
            shares?: { count?: number };
            reactions?: { summary?: { total_count?: number } };
            comments?: { summary?: { total_count?: number } };
          }[];
        }>(
          "GET",
          url(`${s.page_id}/published_posts`, {
            fields: "id,message,created_time,permalink_url,shares,reactions.summary(total_count),comments.summary(total_count)",
            limit: "25",
          }),
        );
        const media: PlatformMediaItem[] = [];
        for (const p of posts.data ?? []) {
          const ins = await call<{ data?: { name: string; values?: { value?: number }[] }[] }>(
            "GET",
            url(`${p.id}/insights`, { metric: "post_impressions,post_impressions_unique" }),
          ).catch(() => ({ data: [] }));
          const metric = (name: string) => ins.data?.find((x) => x.name === name)?.values?.[0]?.value ?? 0;
          media.push({
            externalId: p.id,
            text: p.message ?? "",
            mediaType: "post",
            url: p.permalink_url ?? postUrl(p.id),
            publishedAt: new Date(p.created_time),
            views: metric("post_impressions"),
            reach: metric("post_impressions_unique"),
            likes: p.reactions?.summary?.total_count ?? 0,
            comments: p.comments?.summary?.total_count ?? 0,
            shares: p.shares?.count ?? 0,
          });
        }
        return { handle: page.username ?? page.name ?? null, followers, days: daysFromMedia(media, followers, now), media };
      },
    };
  },
};
