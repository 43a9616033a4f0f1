/**
 * Media for X DMs: the X API v2 chunked upload, then the media id goes into the DM's `attachments`.
 *
 *   POST /2/media/upload/initialize        JSON {media_type, total_bytes, media_category}  → {data: {id}}
 *   POST /2/media/upload/{id}/append       multipart {segment_index, media} (≤ 4 MiB a chunk)
 *   POST /2/media/upload/{id}/finalize                                                    → {data: {id, processing_info?}}
 *   GET  /2/media/upload?command=STATUS&media_id={id}  while processing_info.state is pending|in_progress
 *
 * Categories: dm_image (JPEG, PNG, WEBP), dm_gif, dm_video (MP4, processed asynchronously). Ids are not
 * cached for later sends: X expires them (expires_after_secs), so every send uploads.
 */
import type { AdapterContext, SendResult, StoredMedia } from "../channel.types";
import { mediaBytes } from "../media-bytes";
import { xCall } from "./x.http";
import type { XAuthMode, XSettings } from "./x.settings";

type Failure = Extract<SendResult, { ok: false }>;

/** Types and sizes X takes in DMs (its media best practices): what POST /media may store for an X account. */
export const X_DM_MEDIA: Record<string, number> = {
  "image/jpeg": 5 * 1024 * 1024,
  "image/png": 5 * 1024 * 1024,
  "image/webp": 5 * 1024 * 1024,
  "image/gif": 15 * 1024 * 1024,
  "video/mp4": 512 * 1024 * 1024,
};

const CHUNK = 4 * 1024 * 1024;
/** Longest wait for X's asynchronous processing (videos) inside one send; past it the send is retried. */
const MAX_PROCESSING_MS = 60_000;

const category = (mime: string) => (mime.startsWith("video/") ? "dm_video" : mime === "image/gif" ? "dm_gif" : "dm_image");

interface ProcessingInfo {
  state?: "pending" | "in_progress" | "succeeded" | "failed";
  check_after_secs?: number;
  error?: { message?: string; name?: string };
}

export async function uploadXMedia(opts: {
  ctx: Pick<AdapterContext, "fetch" | "fetchUrl" | "now">;
  settings: XSettings;
  auth: XAuthMode;
  media: { url?: string; file?: StoredMedia };
  /** Waits between status checks (tests pass a short one). */
  sleep?: (ms: number) => Promise<void>;
  /** media_category by content type (default: the DM categories; posts use tweet_image/tweet_gif/tweet_video). */
  categoryOf?: (mime: string) => string;
}): Promise<{ ok: true; mediaId: string } | Failure> {
  const { ctx, settings, auth } = opts;
  const sleep = opts.sleep ?? Bun.sleep;
  const base = `${settings.base_url.replace(/\/+$/, "")}/2/media/upload`;

  const bytes = await mediaBytes(ctx, opts.media, X_DM_MEDIA);
  if (!bytes.ok) return bytes;
  const { blob } = bytes;
  const max = X_DM_MEDIA[blob.type];
  if (max === undefined)
    return {
      ok: false,
      retry: false,
      reason: "MEDIA_INVALID",
      message: `X DMs take ${Object.keys(X_DM_MEDIA).join(", ")}, not ${blob.type || "an unknown type"}`,
    };
  if (blob.size > max)
    return { ok: false, retry: false, reason: "MEDIA_INVALID", message: `${blob.size} bytes is over X's ${max} byte limit for ${blob.type}` };

  const call = async <T>(method: string, url: string, body?: string | FormData): Promise<{ ok: true; data: T | undefined } | Failure> => {
    const answer = await xCall<T>({ ctx, settings, auth, method, url, body });
    // X refusing the file itself (type, size, corrupt) is a media problem, not a recipient or account one.
    return answer.ok || answer.reason !== "PROVIDER_REJECTED" || answer.accountStatus ? answer : { ...answer, reason: "MEDIA_INVALID" };
  };

  const init = await call<{ data?: { id?: string } }>(
    "POST",
    `${base}/initialize`,
    JSON.stringify({ media_type: blob.type, total_bytes: blob.size, media_category: (opts.categoryOf ?? category)(blob.type) }),
  );
  if (!init.ok) return init;
  const id = init.data?.data?.id;
  if (!id) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: "X media initialize answered without an id" };

  for (let offset = 0, segment = 0; offset < blob.size; offset += CHUNK, segment++) {
    const form = new FormData();
    form.append("segment_index", String(segment));
    form.append("media", blob.slice(offset, offset + CHUNK), "chunk");
    const appended = await call("POST", `${base}/${id}/append`, form);
    if (!appended.ok) return appended;
  }

  const finalized = await call<{ data?: { id?: string; processing_info?: ProcessingInfo } }>("POST", `${base}/${id}/finalize`);
  if (!finalized.ok) return finalized;
  let info = finalized.data?.data?.processing_info;
  const started = Date.now();
  while (info && info.state !== "succeeded") {
    if (info.state === "failed")
      return {
        ok: false,
        retry: false,
        reason: "MEDIA_INVALID",
        message: `X could not process the media: ${info.error?.message ?? info.error?.name ?? "failed"}`,
      };
    const wait = Math.min(10_000, Math.max(1, info.check_after_secs ?? 1) * 1000);
    if (Date.now() - started + wait > MAX_PROCESSING_MS)
      return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: "X is still processing the media" };
    await sleep(wait);
    const status = await call<{ data?: { processing_info?: ProcessingInfo } }>("GET", `${base}?command=STATUS&media_id=${encodeURIComponent(id)}`);
    if (!status.ok) return status;
    info = status.data?.data?.processing_info;
  }
  return { ok: true, mediaId: id };
}
