/**
 * The bytes of an outbound media item, for providers that take uploads only (no links): a stored file
 * (POST /media) read from disk, or what a URL serves (type from its Content-Type). Failures are SendResults:
 * a missing file or a refused URL is MEDIA_INVALID (a 5xx or an unreachable URL is retried).
 */
import type { AdapterContext, SendResult, StoredMedia } from "./channel.types";

type Failure = Extract<SendResult, { ok: false }>;

export async function mediaBytes(
  ctx: Pick<AdapterContext, "fetch">,
  media: { url?: string; file?: StoredMedia },
  /** Largest accepted size by content type (checked against a URL's Content-Length before downloading). */
  limits: Record<string, number>,
): Promise<{ ok: true; blob: Blob; filename: string } | Failure> {
  if (media.file) {
    // Read lazily (slices stream from disk): a stored video may be hundreds of megabytes.
    const stored = Bun.file(media.file.path, { type: media.file.mimeType });
    if (!(await stored.exists())) return { ok: false, retry: false, reason: "MEDIA_INVALID", message: `stored media ${media.file.id} is missing on disk` };
    return { ok: true, blob: stored, filename: media.file.filename };
  }
  if (!media.url) return { ok: false, retry: false, reason: "MEDIA_INVALID", message: "media has neither url nor file" };
  try {
    const response = await ctx.fetch(media.url);
    if (!response.ok) return { ok: false, retry: response.status >= 500, reason: "MEDIA_INVALID", message: `media URL answered HTTP ${response.status}` };
    const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    const length = Number(response.headers.get("content-length") ?? 0);
    if (length > (limits[type] ?? 0)) return { ok: false, retry: false, reason: "MEDIA_INVALID", message: `media URL serves ${type || "an unknown type"} of ${length} bytes, which this channel does not take` };
    const filename = new URL(media.url).pathname.split("/").pop() || "media";
    return { ok: true, blob: new Blob([await response.arrayBuffer()], { type }), filename };
  } catch (err) {
    return { ok: false, retry: true, reason: "MEDIA_INVALID", message: `media URL unreachable: ${err instanceof Error ? err.message : String(err)}` };
  }
}
