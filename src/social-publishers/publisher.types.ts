/**
 * The social publisher interface: what the publishing engine (src/modules/social) asks of a platform.
 * One file per provider, registered in publisher.registry.ts. Publishers do transport only: the engine
 * owns retries, statuses and storage (Listmonk's Messenger vs manager split).
 *
 * Contract that keeps a post from ever being published twice:
 * - `publish` calls `progress.save(...)` the moment the platform returns an id (container, publish id,
 *   post id), before any further request; the engine writes it at once in its own transaction.
 * - Before every retry the engine calls `findExisting` with what was saved; a publisher answers the
 *   platform's post if an earlier attempt made it (even one whose answer we never received).
 */
import type { TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { SendResult, StoredMedia } from "../channels/channel.types";
import type { FetchUrl } from "../platform/outbound/outbound.fetch";

/** Longest wait for one platform call (and for a caller's media URL) unless a publisher's settings say otherwise. */
export const PUBLISHER_TIMEOUT_MS = 60_000;

export const SOCIAL_PLATFORMS = ["instagram", "facebook", "x", "tiktok"] as const;
export type SocialPlatform = (typeof SOCIAL_PLATFORMS)[number];
export const SOCIAL_PROVIDERS = ["sandbox", "instagram", "facebook", "x", "tiktok"] as const;
export type SocialProvider = (typeof SOCIAL_PROVIDERS)[number];

export interface SocialAccount {
  id: string;
  company: string;
  platform: SocialPlatform;
  provider: SocialProvider;
  name: string;
  settings: Record<string, unknown>;
}

export interface PublishMedia {
  kind: "image" | "video";
  /** A public URL the platform (or we) can fetch. */
  url?: string;
  /** A file uploaded through POST /media. */
  file?: StoredMedia;
}

/** Ids a publisher saved during earlier attempts of this target (container id, publish id, post id …). */
export type PublishProgress = Record<string, string>;

export interface PublishInput {
  /** Our target id: stable across retries (sandbox derives its post id from it). */
  targetId: string;
  text: string;
  media: PublishMedia[];
  /** Saved by earlier attempts. */
  progress: PublishProgress;
  /** Stores ids immediately (own unit of work): await it the moment the platform answers an id. */
  save(progress: PublishProgress): void | Promise<void>;
  /** When the first attempt began: posts older than this are never taken for ours. */
  firstAttemptAt: Date;
}

export interface PublishedPost {
  externalId: string;
  url: string | null;
  publishedAt: Date;
}

/** A platform failure. `retry`: worth another attempt; `accountError`: the account needs an operator. */
export class PublishError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retry: boolean,
    readonly opts: { retryAt?: Date; accountError?: boolean } = {},
  ) {
    super(message);
  }
}

/** One post on the platform with its metrics (GET /social/media). */
export interface PlatformMediaItem {
  externalId: string;
  text: string;
  mediaType: string;
  url: string | null;
  publishedAt: Date;
  views: number;
  reach: number;
  likes: number;
  comments: number;
  shares: number;
}

/** What one analytics pull returns: the account's numbers for `date` (UTC day) and its recent posts. */
export interface AnalyticsSnapshot {
  handle: string | null;
  followers: number;
  /** Daily rows (UTC dates YYYY-MM-DD) the platform reports; at least today's. */
  days: { date: string; followers: number; views: number; reach: number; engagements: number }[];
  media: PlatformMediaItem[];
}

export interface SocialPublisher {
  publish(input: PublishInput): Promise<PublishedPost>;
  /** The post an earlier attempt made, or null when there is none (then publishing again is safe). */
  findExisting(input: PublishInput): Promise<PublishedPost | null>;
  /** Deletes the post from the platform; undefined = the platform does not allow it through its API. */
  remove?(externalId: string): Promise<void>;
  /** `published`: this account's posts made here (the sandbox has no platform to list them from). */
  analytics(opts: { now: Date; published: { externalId: string; text: string; publishedAt: Date; mediaType: string }[] }): Promise<AnalyticsSnapshot>;
}

export interface PublisherContext {
  account: SocialAccount;
  /** Bounded: a call without its own `signal` is aborted after PUBLISHER_TIMEOUT_MS. */
  fetch: typeof fetch;
  /** The guarded fetcher: the only way to fetch a URL a caller supplied (post media). */
  fetchUrl: FetchUrl;
  now: () => Date;
  /** Waits between status polls (tests pass a short one). */
  sleep: (ms: number) => Promise<void>;
  log: { debug(o: object, m?: string): void; info(o: object, m?: string): void; warn(o: object, m?: string): void; error(o: object, m?: string): void };
}

/** A channel helper's failure (Graph, X helpers of src/channels) as a PublishError. */
export function fromSendFailure(f: Extract<SendResult, { ok: false }>, now: Date): PublishError {
  return new PublishError(f.reason, f.providerCode ? `${f.providerCode}: ${f.message}` : f.message, f.retry, {
    retryAt: f.retryAfterMs !== undefined ? new Date(now.getTime() + f.retryAfterMs) : undefined,
    accountError: f.reason === "AUTH_FAILED" || f.accountStatus !== undefined,
  });
}

/** Same text, ignoring URLs (platforms shorten them) and runs of whitespace: how we recognise our own post. */
export function sameText(a: string, b: string): boolean {
  const norm = (s: string) =>
    s
      .replace(/https?:\/\/\S+/g, "")
      .replace(/\s+/g, " ")
      .trim();
  return norm(a) === norm(b);
}

/** Daily rows computed from posts (platforms without account insights): per UTC day of the posts, plus today. */
export function daysFromMedia(media: PlatformMediaItem[], followers: number, now: Date): AnalyticsSnapshot["days"] {
  const byDate = new Map<string, AnalyticsSnapshot["days"][number]>();
  const today = now.toISOString().slice(0, 10);
  byDate.set(today, { date: today, followers, views: 0, reach: 0, engagements: 0 });
  for (const m of media) {
    const date = m.publishedAt.toISOString().slice(0, 10);
    const row = byDate.get(date) ?? { date, followers, views: 0, reach: 0, engagements: 0 };
    row.views += m.views;
    row.reach += m.reach;
    row.engagements += m.likes + m.comments + m.shares;
    byDate.set(date, row);
  }
  return [...byDate.values()];
}

export interface PublisherDefinition {
  /** Platforms this provider can publish to. */
  platforms: readonly SocialPlatform[];
  /**
   * Media uploaded through POST /media can be published (the provider uploads the bytes). false: the
   * platform pulls media from public URLs only (Instagram), so posts must give `{url}`.
   */
  uploads: boolean;
  /** Checks `[social_accounts.settings]` at start-up; throws an Error naming the key. */
  readSettings(raw: Record<string, unknown>): Record<string, unknown>;
  create(ctx: PublisherContext): SocialPublisher;
}

/** Calls a platform and parses its JSON; network trouble is a retryable PublishError. */
export async function callJson(
  ctx: Pick<PublisherContext, "fetch">,
  url: string,
  init: RequestInit,
  platformName: string,
  /** Integers of 16+ digits (TikTok's int64 post ids) are read as strings: JSON numbers lose them past 2^53. */
  opts: { bigIntegersAsStrings?: boolean; timeoutMs?: number } = {},
): Promise<{ status: number; headers: Headers; body: any }> {
  let response: Response;
  try {
    response = await ctx.fetch(url, { ...init, signal: AbortSignal.timeout(opts.timeoutMs ?? PUBLISHER_TIMEOUT_MS) });
  } catch (e) {
    throw new PublishError("PLATFORM_UNREACHABLE", `${platformName} unreachable: ${e instanceof Error ? e.message : String(e)}`, true);
  }
  const text = await response.text().catch(() => "");
  let body: any;
  try {
    const safe = opts.bigIntegersAsStrings ? text.replace(/([:[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"') : text;
    body = safe ? JSON.parse(safe) : undefined;
  } catch {
    body = text;
  }
  return { status: response.status, headers: response.headers, body };
}

/** Reads settings against a TypeBox schema with defaults; throws naming the first bad key. */
export function settingsReader<T>(schema: TSchema) {
  return (raw: Record<string, unknown>): T => {
    const value = Value.Default(schema, structuredClone(raw));
    if (!Value.Check(schema, value)) {
      const err = [...Value.Errors(schema, value)].sort((a, b) => b.path.length - a.path.length)[0]!;
      const key = err.path.replace(/^\//, "").replace(/\//g, ".");
      throw new Error(`key "settings.${key}" has value ${JSON.stringify(err.value) ?? "(missing)"}: ${err.message.toLowerCase()}`);
    }
    return value as T;
  };
}

export const trimBase = (url: string) => url.replace(/\/+$/, "");

/** Deterministic 32-bit hash (FNV-1a): sandbox metrics that are the same on every run. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
