/**
 * Platform rules of social posts (DESIGN §11), as one table, and the pure check of a post's content against
 * it. A check returns problems (pointer + message); the service turns them into 422 SOCIAL_POST_INVALID.
 */
import type { SocialPlatform } from "../../social-publishers/publisher.types";
import type { StoredPostMedia } from "./social.table";

export interface PlatformLimits {
  /** Most characters of text (X counts every URL as 23). */
  textMax: number;
  /** Most media items in one post. */
  mediaMax: number;
  /** A post without media is refused. */
  needsMedia: boolean;
  /** Video allowed (always alone: one video per post). */
  video: boolean;
  /** Only video (TikTok). */
  videoOnly: boolean;
  /** Published posts can be deleted through the platform's API. */
  deletable: boolean;
}

export const PLATFORM_LIMITS: Record<SocialPlatform, PlatformLimits> = {
  instagram: { textMax: 2200, mediaMax: 10, needsMedia: true, video: true, videoOnly: false, deletable: false },
  facebook: { textMax: 63206, mediaMax: 10, needsMedia: false, video: false, videoOnly: false, deletable: true },
  x: { textMax: 280, mediaMax: 4, needsMedia: false, video: true, videoOnly: false, deletable: true },
  tiktok: { textMax: 2200, mediaMax: 1, needsMedia: true, video: true, videoOnly: true, deletable: false },
};

const PLATFORM_NAMES: Record<SocialPlatform, string> = { instagram: "Instagram", facebook: "Facebook", x: "X", tiktok: "TikTok" };

const URL_RE = /https?:\/\/[^\s]+/gi;

/** Code point ranges X counts as 1 (twitter-text config v3); every other code point (CJK, emoji …) counts 2. */
const X_LIGHT: [number, number][] = [
  [0, 4351],
  [8192, 8205],
  [8208, 8223],
  [8242, 8247],
];

/**
 * X's weighted length (twitter-text v3): every URL counts 23, Latin and most scripts 1 per code point, CJK
 * and emoji 2. NB! An emoji ZWJ sequence counts 2 per code point here (X counts it 2 in all), so a post
 * full of such sequences is refused a little early, never accepted and then refused by X.
 */
export function xLength(text: string): number {
  let n = 0;
  const rest = text.replace(URL_RE, () => {
    n += 23;
    return "";
  });
  for (const ch of rest) {
    const cp = ch.codePointAt(0)!;
    n += X_LIGHT.some(([a, b]) => cp >= a && cp <= b) ? 1 : 2;
  }
  return n;
}

export function textLength(platform: SocialPlatform, text: string): number {
  return platform === "x" ? xLength(text) : [...text].length;
}

export interface Problem {
  pointer: string;
  message: string;
}

/**
 * The problems of one target's content. `textPointer`/`mediaPointer`: where that content came from in the
 * request (`/text` or `/overrides/{accountId}/text`), so the client sees which field breaks which rule.
 */
export function checkContent({
  platform,
  text,
  media,
  textPointer,
  mediaPointer,
}: {
  platform: SocialPlatform;
  text: string;
  media: StoredPostMedia[];
  textPointer: string;
  mediaPointer: string;
}): Problem[] {
  const rules = PLATFORM_LIMITS[platform];
  const name = PLATFORM_NAMES[platform];
  const out: Problem[] = [];
  const length = textLength(platform, text);
  if (length > rules.textMax)
    out.push({
      pointer: textPointer,
      message: `${name} allows ${rules.textMax} characters${platform === "x" ? " (URLs count 23)" : ""}; this text has ${length}`,
    });
  const videos = media.filter((m) => m.kind === "video").length;
  const images = media.length - videos;
  if (rules.videoOnly) {
    if (videos !== 1 || images > 0) out.push({ pointer: mediaPointer, message: `${name} needs exactly one video` });
  } else if (rules.needsMedia && media.length === 0) {
    out.push({ pointer: mediaPointer, message: `${name} needs 1-${rules.mediaMax} images or one video` });
  } else if (videos > 0 && !rules.video) {
    out.push({ pointer: mediaPointer, message: `${name} posts take images only (at most ${rules.mediaMax})` });
  } else if (videos > 1 || (videos === 1 && images > 0)) {
    out.push({ pointer: mediaPointer, message: `${name} takes one video alone, not mixed with other media` });
  } else if (images > rules.mediaMax) {
    out.push({ pointer: mediaPointer, message: `${name} allows at most ${rules.mediaMax} images; this post has ${images}` });
  }
  return out;
}

/** The kind of a media URL, from its path's extension (video for mp4/mov/webm/m4v, else image). */
export function kindOfUrl(url: string): "image" | "video" {
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {}
  return /\.(mp4|mov|webm|m4v)$/i.test(path) ? "video" : "image";
}
