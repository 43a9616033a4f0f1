/**
 * Loopback fake of the X API v2 DM endpoint (`POST /2/dm_conversations/with/:participant_id/messages`),
 * of the chunked media upload (`/2/media/upload/initialize`, `/{id}/append`, `/{id}/finalize`, STATUS) and of
 * the Account Activity webhook sender (CRC GET + signed POST deliveries).
 * - Uploads are assembled from their segments; `uploaded(id)` returns the bytes. A DM may attach only a
 *   finalized (and, for videos, processed) media id. Videos answer finalize with processing_info
 *   `pending`, then `in_progress`, then `succeeded` (or `failed` with `failVideoProcessing`).
 *
 * - Requests are recorded; every call must carry `Authorization: Bearer …` or `OAuth …`. With
 *   `oauth1` credentials given, the fake verifies the OAuth 1.0a HMAC-SHA1 signature itself (an
 *   implementation independent of the adapter's library) and answers 401 on a mismatch.
 * - `fail(failure)` queues one failure: `xErrors.*` (RFC 7807 bodies, 429 with x-rate-limit-*), any
 *   HTTP answer, or a dropped connection.
 * - Posts (social publishing): `POST /2/tweets` {text, media:{media_ids}} → 201 {data:{id,text}}, `DELETE
 *   /2/tweets/:id`, `GET /2/users/:id/tweets` (start_time, max_results, tweet.fields=created_at,public_metrics)
 *   and `GET /2/users/:id?user.fields=public_metrics`. `tweets` is what exists on "X";
 *   `dropAfterCreate()` makes the next post succeed on X and then drops the connection before the answer
 *   (the crash between "platform accepted" and "we stored it").
 */
import { createHmac, randomBytes } from "node:crypto";
import { failureResponse, FailureQueue, json, recordRequest, type InjectedFailure, type RecordedFile, type RecordedRequest } from "./fake-http";

const problem = (status: number, title: string, detail: string, extra: Record<string, unknown> = {}): InjectedFailure => ({
  kind: "response",
  status,
  body: { title, type: "about:blank", status, detail, ...extra },
});

export const xErrors = {
  /** [unsure] exact text: X does not document it; this is the form seen in practice. */
  notAcceptingDms: () => problem(403, "Forbidden", "You are not permitted to send a Direct Message to this user."),
  clientForbidden: () =>
    problem(
      403,
      "Client Forbidden",
      "When authenticating requests to the Twitter API v2 endpoints, you must use keys and tokens from a Twitter developer App that is attached to a Project.",
      {
        type: "https://api.twitter.com/2/problems/client-forbidden",
        reason: "client-not-enrolled",
      },
    ),
  unauthorized: () => problem(401, "Unauthorized", "Unauthorized"),
  invalidParticipant: () =>
    ({
      kind: "response",
      status: 400,
      body: {
        errors: [{ parameters: { participant_id: ["abc"] }, message: "The `participant_id` path parameter value 'abc' is not valid" }],
        title: "Invalid Request",
        detail: "One or more parameters to your request was invalid.",
        type: "https://api.twitter.com/2/problems/invalid-request",
      },
    }) as InjectedFailure,
  rateLimited: (opts: {
    resetEpochS: number;
    limit?: number;
    remaining?: number;
    user24h?: { limit: number; remaining: number; resetEpochS: number };
  }): InjectedFailure => {
    const headers: Record<string, string> = {
      "x-rate-limit-limit": String(opts.limit ?? 200),
      "x-rate-limit-remaining": String(opts.remaining ?? 0),
      "x-rate-limit-reset": String(opts.resetEpochS),
    };
    if (opts.user24h) {
      headers["x-user-limit-24hour-limit"] = String(opts.user24h.limit);
      headers["x-user-limit-24hour-remaining"] = String(opts.user24h.remaining);
      headers["x-user-limit-24hour-reset"] = String(opts.user24h.resetEpochS);
    }
    return { kind: "response", status: 429, body: { title: "Too Many Requests", detail: "Too Many Requests", type: "about:blank", status: 429 }, headers };
  },
  serverError: () => problem(503, "Service Unavailable", "Service Unavailable"),
};

export interface XOAuth1Secrets {
  consumerSecret: string;
  tokenSecret: string;
}

interface XUpload {
  type: string;
  total: number;
  category: string;
  segments: Map<number, Uint8Array>;
  finalized: boolean;
  /** Remaining STATUS answers before `succeeded` (videos). */
  processing: ("pending" | "in_progress")[];
}

const MEDIA_CATEGORIES = new Set(["dm_image", "dm_gif", "dm_video", "tweet_image", "tweet_gif", "tweet_video", "amplify_video", "subtitles"]);

export class XFake {
  readonly requests: RecordedRequest[] = [];
  /** Video processing ends in `failed` instead of `succeeded`. */
  failVideoProcessing = false;
  private uploads = new Map<string, XUpload>();
  private nextMediaId = 1_900_000_000_000_000_000n;
  private failures = new FailureQueue();
  private nextEventId = 1_800_000_000_000_000_000n;
  /** Posts on "X", in creation order. */
  readonly tweets: { id: string; text: string; mediaIds: string[]; createdAt: Date; deleted: boolean; metrics: Record<string, number> }[] = [];
  private nextTweetId = 1_790_000_000_000_000_000n;
  private dropCreates = 0;
  followers = 1234;
  /** X's clock (created_at of posts); tests that drive the app's clock share it. */
  now: () => Date = () => new Date();
  private server: ReturnType<typeof Bun.serve>;

  private constructor(private readonly opts: { userId: string; oauth1?: XOAuth1Secrets; port?: number; hostname?: string }) {
    this.server = Bun.serve({ port: opts.port ?? 0, hostname: opts.hostname ?? "127.0.0.1", fetch: (req) => this.handle(req) });
  }

  /** `userId` is the sending account (used in dm_conversation_id). */
  static start(opts: { userId?: string; oauth1?: XOAuth1Secrets; port?: number; hostname?: string } = {}): XFake {
    return new XFake({ userId: opts.userId ?? "1000000001", ...opts });
  }

  get url(): string {
    return `http://${this.server.hostname}:${this.server.port}`;
  }
  get port(): number {
    return this.server.port!;
  }

  /** The assembled bytes of a finalized upload, with its type and category. */
  uploaded(id: string): { type: string; category: string; bytes: Uint8Array } | undefined {
    const u = this.uploads.get(id);
    if (!u?.finalized) return undefined;
    return { type: u.type, category: u.category, bytes: assemble(u) };
  }

  fail(failure: InjectedFailure): void {
    this.failures.push(() => true, failure);
  }

  /** The next `POST /2/tweets` creates the post, then the connection drops before the answer. */
  dropAfterCreate(): void {
    this.dropCreates++;
  }

  async stop(): Promise<void> {
    await this.server.stop(true);
  }

  private async handle(req: Request): Promise<Response> {
    const recorded = await recordRequest(req);
    this.requests.push(recorded);
    const failure = this.failures.take(recorded);
    if (failure) return failureResponse(failure);
    const auth = recorded.headers.authorization ?? "";
    if (!auth.startsWith("Bearer ") && !auth.startsWith("OAuth ")) return failureResponse(xErrors.unauthorized());
    if (
      auth.startsWith("OAuth ") &&
      this.opts.oauth1 &&
      !oauth1SignatureValid({ method: recorded.method, url: req.url, authorization: auth, ...this.opts.oauth1 })
    ) {
      return failureResponse(xErrors.unauthorized());
    }
    if (recorded.path.startsWith("/2/media/upload")) return this.media(recorded);
    const match = recorded.path.match(/^\/2\/dm_conversations\/with\/([^/]+)\/messages$/);
    if (recorded.method === "POST" && match) {
      const participant = match[1];
      if (!/^\d+$/.test(participant)) return failureResponse(xErrors.invalidParticipant());
      const body = recorded.body as { text?: string; attachments?: { media_id?: string }[] } | undefined;
      if (!body || (typeof body.text !== "string" && !body.attachments)) {
        return json(
          {
            errors: [{ message: "text or attachments is required" }],
            title: "Invalid Request",
            detail: "One or more parameters to your request was invalid.",
            type: "https://api.twitter.com/2/problems/invalid-request",
          },
          400,
        );
      }
      // Quick-reply options (X's documented DM quick replies): type "options", 1-20 options, label ≤ 36,
      // description ≤ 72, metadata ≤ 1000 characters.
      const quick = (body as { quick_reply?: { type?: string; options?: { label?: string; metadata?: string; description?: string }[] } }).quick_reply;
      if (quick) {
        const options = quick.options ?? [];
        const bad =
          quick.type !== "options" ||
          options.length < 1 ||
          options.length > 20 ||
          options.some((o) => !o.label || o.label.length > 36 || !o.metadata || o.metadata.length > 1000 || (o.description?.length ?? 0) > 72);
        if (bad) return invalid("quick_reply: type options with 1 to 20 options (label ≤ 36, metadata ≤ 1000, description ≤ 72)");
      }
      for (const a of body.attachments ?? []) {
        const u = a.media_id ? this.uploads.get(a.media_id) : undefined;
        if (!u?.finalized || u.processing.length) return invalid(`media_id ${a.media_id} is not a usable media id`);
      }
      const ids = [this.opts.userId, participant].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      return json({ data: { dm_conversation_id: ids.join("-"), dm_event_id: String(this.nextEventId++) } }, 201);
    }
    const posts = this.posts(recorded);
    if (posts) return posts;
    return json({ title: "Not Found Error", type: "https://api.twitter.com/2/problems/resource-not-found", status: 404, detail: "Not found" }, 404);
  }

  private posts(r: RecordedRequest): Response | undefined {
    const live = () => this.tweets.filter((t) => !t.deleted);
    const view = (t: (typeof this.tweets)[number], fields: string[]) => ({
      id: t.id,
      text: t.text,
      edit_history_tweet_ids: [t.id],
      ...(fields.includes("created_at") ? { created_at: t.createdAt.toISOString() } : {}),
      ...(fields.includes("public_metrics") ? { public_metrics: t.metrics } : {}),
    });
    if (r.method === "POST" && r.path === "/2/tweets") {
      const b = r.body as { text?: unknown; media?: { media_ids?: unknown } } | undefined;
      if (!b || (typeof b.text !== "string" && !b.media)) return invalid("text or media is required");
      const mediaIds = Array.isArray(b.media?.media_ids) ? (b.media!.media_ids as string[]) : [];
      if (mediaIds.length > 4) return invalid("at most 4 media_ids");
      for (const id of mediaIds) {
        const u = this.uploads.get(id);
        if (!u?.finalized || u.processing.length) return invalid(`media_id ${id} is not a usable media id`);
        if (u.category.startsWith("dm_")) return invalid(`media_id ${id} was uploaded for DMs (${u.category}), not for posts`);
      }
      const text = typeof b.text === "string" ? b.text : "";
      if (live().some((t) => t.text === text && text !== ""))
        return json({ detail: "You are not allowed to create a Tweet with duplicate content.", type: "about:blank", title: "Forbidden", status: 403 }, 403);
      const id = String(this.nextTweetId++);
      const n = Number(BigInt(id) % 1000n);
      this.tweets.push({
        id,
        text,
        mediaIds,
        createdAt: this.now(),
        deleted: false,
        metrics: { retweet_count: n % 7, reply_count: n % 5, like_count: 10 + (n % 40), quote_count: n % 3, bookmark_count: 1, impression_count: 500 + n },
      });
      if (this.dropCreates > 0) {
        this.dropCreates--;
        return failureResponse({ kind: "drop" });
      }
      return json({ data: { id, text, edit_history_tweet_ids: [id] } }, 201);
    }
    const del = r.path.match(/^\/2\/tweets\/(\d+)$/);
    if (r.method === "DELETE" && del) {
      const t = live().find((x) => x.id === del[1]);
      if (!t)
        return json(
          {
            title: "Not Found Error",
            type: "https://api.twitter.com/2/problems/resource-not-found",
            status: 404,
            detail: `Could not find tweet with id: [${del[1]}].`,
          },
          404,
        );
      t.deleted = true;
      return json({ data: { deleted: true } });
    }
    const timeline = r.path.match(/^\/2\/users\/(\d+)\/tweets$/);
    if (r.method === "GET" && timeline) {
      const fields = (r.query.get("tweet.fields") ?? "").split(",");
      const start = r.query.get("start_time");
      const max = Number(r.query.get("max_results") ?? 10);
      if (!(max >= 5 && max <= 100)) return invalid("max_results must be between 5 and 100");
      const rows = live()
        .filter((t) => !start || t.createdAt.getTime() >= Date.parse(start))
        .reverse()
        .slice(0, max)
        .map((t) => view(t, fields));
      return json(
        rows.length
          ? { data: rows, meta: { result_count: rows.length, newest_id: rows[0]!.id, oldest_id: rows[rows.length - 1]!.id } }
          : { meta: { result_count: 0 } },
      );
    }
    const user = r.path.match(/^\/2\/users\/(\d+)$/);
    if (r.method === "GET" && user) {
      return json({
        data: {
          id: user[1],
          name: "Our Shop",
          username: "ourshop",
          public_metrics: { followers_count: this.followers, following_count: 1, tweet_count: live().length, listed_count: 0 },
        },
      });
    }
    return undefined;
  }

  private media(r: RecordedRequest): Response {
    if (r.method === "POST" && r.path === "/2/media/upload/initialize") {
      const b = r.body as { media_type?: unknown; total_bytes?: unknown; media_category?: unknown } | undefined;
      if (
        typeof b?.media_type !== "string" ||
        typeof b.total_bytes !== "number" ||
        (b.media_category !== undefined && !MEDIA_CATEGORIES.has(String(b.media_category)))
      )
        return invalid("media_type, total_bytes (number) and a known media_category are required");
      const id = String(this.nextMediaId++);
      const video = String(b.media_category ?? "").endsWith("video");
      this.uploads.set(id, {
        type: b.media_type,
        total: b.total_bytes,
        category: String(b.media_category ?? ""),
        segments: new Map(),
        finalized: false,
        processing: video ? ["in_progress"] : [],
      });
      return json({ data: { id, media_key: `3_${id}`, expires_after_secs: 86400 } });
    }
    const m = r.path.match(/^\/2\/media\/upload\/(\d+)\/(append|finalize)$/);
    const u = m ? this.uploads.get(m[1]!) : r.method === "GET" ? this.uploads.get(r.query.get("media_id") ?? "") : undefined;
    if (!u) return invalid("unknown media id");
    if (m?.[2] === "append") {
      const f = r.body as { segment_index?: string; media?: RecordedFile } | undefined;
      const index = Number(f?.segment_index);
      if (!f?.media || !Number.isInteger(index) || index < 0 || index > 999) return invalid("segment_index (0-999) and media are required");
      if (f.media.size > 5 * 1024 * 1024) return invalid("a segment must be at most 5 MB");
      u.segments.set(index, f.media.bytes);
      return json({ data: { expires_at: Math.floor(Date.now() / 1000) + 86400 } });
    }
    if (m?.[2] === "finalize") {
      const size = assemble(u).length;
      if (size !== u.total) return invalid(`File size mismatch: got ${size} bytes, total_bytes was ${u.total}`);
      u.finalized = true;
      const info = u.processing.length ? { processing_info: { state: "pending", check_after_secs: 1 } } : {};
      return json({ data: { id: m[1], media_key: `3_${m[1]}`, size, expires_after_secs: 86400, ...info } });
    }
    if (r.method === "GET" && r.query.get("command") === "STATUS") {
      const state = u.processing.shift() ?? (this.failVideoProcessing && u.category.endsWith("video") ? "failed" : "succeeded");
      if (state === "failed") u.processing.unshift("pending"); // never usable
      const error = state === "failed" ? { error: { code: 1, name: "InvalidMedia", message: "Unsupported video format" } } : {};
      return json({
        data: {
          id: r.query.get("media_id"),
          processing_info: {
            state,
            check_after_secs: state === "succeeded" || state === "failed" ? undefined : 1,
            progress_percent: state === "succeeded" ? 100 : 40,
            ...error,
          },
        },
      });
    }
    return invalid("unsupported media upload call");
  }

  // ------------------------------------------------------------------ webhook side (X → appliance)

  /** Send a CRC check as X does; returns the answer and the token X would expect. */
  static async crc(opts: { url: string; consumerSecret: string; crcToken?: string }): Promise<{ status: number; body: unknown; expected: string }> {
    const token = opts.crcToken ?? randomBytes(24).toString("base64url");
    const target = new URL(opts.url);
    target.searchParams.set("crc_token", token);
    const res = await fetch(target, { method: "GET" });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: res.status, body, expected: `sha256=${createHmac("sha256", opts.consumerSecret).update(token).digest("base64")}` };
  }

  /** POST an Account Activity payload signed with `consumerSecret` (pass `signature` to forge one). */
  static async pushWebhook(opts: { url: string; payload: unknown; consumerSecret: string; signature?: string | null }): Promise<Response> {
    const raw = JSON.stringify(opts.payload);
    const headers: Record<string, string> = { "content-type": "application/json" };
    const signature = opts.signature === undefined ? `sha256=${createHmac("sha256", opts.consumerSecret).update(raw).digest("base64")}` : opts.signature;
    if (signature !== null) headers["x-twitter-webhooks-signature"] = signature;
    return fetch(opts.url, { method: "POST", headers, body: raw });
  }

  /** A real-shaped Account Activity delivery with one incoming DM; `quickReplyMetadata`: a tap on our option. */
  static dmPayload(opts: {
    forUserId: string;
    senderId: string;
    text: string;
    quickReplyMetadata?: string;
    eventId?: string;
    createdMs?: number;
    screenName?: string;
    name?: string;
  }): Record<string, unknown> {
    const created = String(opts.createdMs ?? Date.now());
    return {
      for_user_id: opts.forUserId,
      direct_message_events: [
        {
          type: "message_create",
          id: opts.eventId ?? "1500000000000000001",
          created_timestamp: created,
          message_create: {
            target: { recipient_id: opts.forUserId },
            sender_id: opts.senderId,
            message_data: {
              text: opts.text,
              entities: { hashtags: [], symbols: [], user_mentions: [], urls: [] },
              ...(opts.quickReplyMetadata !== undefined ? { quick_reply_response: { type: "options", metadata: opts.quickReplyMetadata } } : {}),
            },
          },
        },
      ],
      users: {
        [opts.senderId]: {
          id: opts.senderId,
          created_timestamp: "1422556069340",
          name: opts.name ?? "Ann Lee",
          screen_name: opts.screenName ?? "annlee",
          protected: false,
          verified: false,
          followers_count: 10,
          friends_count: 20,
          statuses_count: 30,
          profile_image_url_https: "https://pbs.twimg.com/x.jpg",
        },
        [opts.forUserId]: {
          id: opts.forUserId,
          created_timestamp: "1400000000000",
          name: "Our Shop",
          screen_name: "ourshop",
          protected: false,
          verified: true,
          followers_count: 1000,
          friends_count: 1,
          statuses_count: 500,
          profile_image_url_https: "https://pbs.twimg.com/y.jpg",
        },
      },
    };
  }
}

/** RFC 5849 §3.4 signature check of an `Authorization: OAuth …` header (HMAC-SHA1, no body params). */
export function oauth1SignatureValid(opts: { method: string; url: string; authorization: string; consumerSecret: string; tokenSecret: string }): boolean {
  const params = parseOAuthHeader(opts.authorization);
  const signature = params.oauth_signature;
  if (!signature || params.oauth_signature_method !== "HMAC-SHA1") return false;
  const url = new URL(opts.url);
  const pairs: [string, string][] = [];
  for (const [k, v] of Object.entries(params)) if (k !== "oauth_signature" && k !== "realm") pairs.push([k, v]);
  for (const [k, v] of url.searchParams) pairs.push([k, v]);
  const encoded = pairs.map(([k, v]) => [rfc3986(k), rfc3986(v)] as const).sort(([ak, av], [bk, bv]) => (ak === bk ? (av < bv ? -1 : 1) : ak < bk ? -1 : 1));
  const paramString = encoded.map(([k, v]) => `${k}=${v}`).join("&");
  const baseUrl = `${url.protocol}//${url.host}${url.pathname}`;
  const base = [opts.method.toUpperCase(), rfc3986(baseUrl), rfc3986(paramString)].join("&");
  const key = `${rfc3986(opts.consumerSecret)}&${rfc3986(opts.tokenSecret)}`;
  return createHmac("sha1", key).update(base).digest("base64") === signature;
}

export function parseOAuthHeader(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of header.replace(/^OAuth\s+/, "").matchAll(/([\w]+)="([^"]*)"/g)) out[m[1]] = decodeURIComponent(m[2]);
  return out;
}

function rfc3986(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function invalid(detail: string): Response {
  return json(
    {
      errors: [{ message: detail }],
      title: "Invalid Request",
      detail: "One or more parameters to your request was invalid.",
      type: "https://api.twitter.com/2/problems/invalid-request",
    },
    400,
  );
}

function assemble(u: XUpload): Uint8Array {
  const parts = [...u.segments.entries()].sort((a, b) => a[0] - b[0]).map(([, bytes]) => bytes);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
