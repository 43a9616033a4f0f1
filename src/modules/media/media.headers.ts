/**
 * Response headers for stored media bytes, wherever they are served (GET /media/:id/content, the signed
 * social media links that Instagram pulls). NB! An upload is attacker-chosen bytes on our origin: an SVG
 * or HTML file opened from a link would run its script with the appliance's origin. So every answer is
 * `Content-Security-Policy: default-src 'none'; sandbox` (no script, no same-origin access even if a browser
 * renders it) and `nosniff`. Only raster images, video and audio whose bytes the upload checked against
 * their type (media.sniff.ts) — what a platform shows inline and what cannot carry script — may be
 * `inline`; everything else (SVG, HTML, XML, PDF, types taken on the uploader's word) is `attachment`.
 */
import { isSniffable, normaliseMime } from "./media.sniff";
import type { MediaRow } from "./media.service";

export function isInlineSafe(mimeType: string): boolean {
  const mime = normaliseMime(mimeType);
  return /^(image|video|audio)\//.test(mime) && isSniffable(mime);
}

export function mediaHeaders(row: Pick<MediaRow, "mimeType" | "size" | "filename">, { inline = false }: { inline?: boolean } = {}): Record<string, string> {
  const disposition = inline && isInlineSafe(row.mimeType) ? "inline" : "attachment";
  return {
    "content-type": row.mimeType,
    "content-length": String(row.size),
    "content-disposition": `${disposition}; filename*=UTF-8''${encodeURIComponent(row.filename)}`,
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
  };
}
