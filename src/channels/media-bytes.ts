/**
 * The bytes of an outbound media item, for providers that take uploads only (no links): a stored file
 * (POST /media) read from disk, or what a URL serves (type from its Content-Type), fetched through the
 * guarded fetcher (`ctx.fetchUrl`, DESIGN §23) under the channel's size limit for that type. Failures are
 * SendResults: a refused URL is URL_NOT_ALLOWED; a missing file, an error answer, a refused type or a file
 * too large is MEDIA_INVALID (a 5xx or an unreachable URL is retried). Messages never echo what the URL's
 * server answered.
 */
import type { FetchUrlResult } from "../platform/outbound/outbound.fetch";
import type { AdapterContext, SendResult, StoredMedia } from "./channel.types";

type Failure = Extract<SendResult, { ok: false }>;

/** A failed fetch of a media URL as a SendResult, in our words. */
export function mediaUrlFailure(got: Extract<FetchUrlResult, { ok: false }>): Failure {
  const message = got.code === "TOO_LARGE" ? "media URL serves a file too large for this channel" : `media ${got.message}`;
  return { ok: false, retry: got.retry, reason: got.code === "URL_NOT_ALLOWED" ? "URL_NOT_ALLOWED" : "MEDIA_INVALID", message };
}

export async function mediaBytes(
  ctx: Pick<AdapterContext, "fetchUrl">,
  media: { url?: string; file?: StoredMedia },
  /** Largest accepted size by content type: a URL serving another type, or more, is refused. */
  limits: Record<string, number>,
): Promise<{ ok: true; blob: Blob; filename: string } | Failure> {
  if (media.file) {
    // Read lazily (slices stream from disk): a stored video may be hundreds of megabytes.
    const stored = Bun.file(media.file.path, { type: media.file.mimeType });
    if (!(await stored.exists())) return { ok: false, retry: false, reason: "MEDIA_INVALID", message: `stored media ${media.file.id} is missing on disk` };
    return { ok: true, blob: stored, filename: media.file.filename };
  }
  if (!media.url) return { ok: false, retry: false, reason: "MEDIA_INVALID", message: "media has neither url nor file" };
  const got = await ctx.fetchUrl({ url: media.url, maxBytes: (type) => limits[type] });
  if (!got.ok) return mediaUrlFailure(got);
  const filename = new URL(media.url).pathname.split("/").pop() || "media";
  return { ok: true, blob: new Blob([got.bytes], { type: got.contentType }), filename };
}
