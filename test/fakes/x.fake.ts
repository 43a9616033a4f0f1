/**
 * Loopback fake of the X API v2 DM endpoint (`POST /2/dm_conversations/with/:participant_id/messages`)
 * and of the Account Activity webhook sender (CRC GET + signed POST deliveries).
 *
 * - Requests are recorded; every call must carry `Authorization: Bearer …` or `OAuth …`. With
 *   `oauth1` credentials given, the fake verifies the OAuth 1.0a HMAC-SHA1 signature itself (an
 *   implementation independent of the adapter's library) and answers 401 on a mismatch.
 * - `fail(failure)` queues one failure: `xErrors.*` (RFC 7807 bodies, 429 with x-rate-limit-*), any
 *   HTTP answer, or a dropped connection.
 */
import { createHmac, randomBytes } from "node:crypto";
import { failureResponse, FailureQueue, json, recordRequest, type InjectedFailure, type RecordedRequest } from "./fake-http";

const problem = (status: number, title: string, detail: string, extra: Record<string, unknown> = {}): InjectedFailure => ({
  kind: "response",
  status,
  body: { title, type: "about:blank", status, detail, ...extra },
});

export const xErrors = {
  /** [unsure] exact text: X does not document it; this is the form seen in practice. */
  notAcceptingDms: () => problem(403, "Forbidden", "You are not permitted to send a Direct Message to this user."),
  clientForbidden: () =>
    problem(403, "Client Forbidden", "When authenticating requests to the Twitter API v2 endpoints, you must use keys and tokens from a Twitter developer App that is attached to a Project.", {
      type: "https://api.twitter.com/2/problems/client-forbidden",
      reason: "client-not-enrolled",
    }),
  unauthorized: () => problem(401, "Unauthorized", "Unauthorized"),
  invalidParticipant: () =>
    ({
      kind: "response",
      status: 400,
      body: { errors: [{ parameters: { participant_id: ["abc"] }, message: "The `participant_id` path parameter value 'abc' is not valid" }], title: "Invalid Request", detail: "One or more parameters to your request was invalid.", type: "https://api.twitter.com/2/problems/invalid-request" },
    }) as InjectedFailure,
  rateLimited: (opts: { resetEpochS: number; limit?: number; remaining?: number; user24h?: { limit: number; remaining: number; resetEpochS: number } }): InjectedFailure => {
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

export class XFake {
  readonly requests: RecordedRequest[] = [];
  private failures = new FailureQueue();
  private nextEventId = 1_800_000_000_000_000_000n;
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

  fail(failure: InjectedFailure): void {
    this.failures.push(() => true, failure);
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
    if (auth.startsWith("OAuth ") && this.opts.oauth1 && !oauth1SignatureValid({ method: recorded.method, url: req.url, authorization: auth, ...this.opts.oauth1 })) {
      return failureResponse(xErrors.unauthorized());
    }
    const match = recorded.path.match(/^\/2\/dm_conversations\/with\/([^/]+)\/messages$/);
    if (recorded.method === "POST" && match) {
      const participant = match[1];
      if (!/^\d+$/.test(participant)) return failureResponse(xErrors.invalidParticipant());
      const body = recorded.body as { text?: string; attachments?: unknown[] } | undefined;
      if (!body || (typeof body.text !== "string" && !body.attachments)) {
        return json({ errors: [{ message: "text or attachments is required" }], title: "Invalid Request", detail: "One or more parameters to your request was invalid.", type: "https://api.twitter.com/2/problems/invalid-request" }, 400);
      }
      const ids = [this.opts.userId, participant].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
      return json({ data: { dm_conversation_id: ids.join("-"), dm_event_id: String(this.nextEventId++) } }, 201);
    }
    return json({ title: "Not Found Error", type: "https://api.twitter.com/2/problems/resource-not-found", status: 404, detail: "Not found" }, 404);
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

  /** A real-shaped Account Activity delivery with one incoming DM. */
  static dmPayload(opts: { forUserId: string; senderId: string; text: string; eventId?: string; createdMs?: number; screenName?: string; name?: string }): Record<string, unknown> {
    const created = String(opts.createdMs ?? Date.now());
    return {
      for_user_id: opts.forUserId,
      direct_message_events: [
        {
          type: "message_create",
          id: opts.eventId ?? "1500000000000000001",
          created_timestamp: created,
          message_create: { target: { recipient_id: opts.forUserId }, sender_id: opts.senderId, message_data: { text: opts.text, entities: { hashtags: [], symbols: [], user_mentions: [], urls: [] } } },
        },
      ],
      users: {
        [opts.senderId]: { id: opts.senderId, created_timestamp: "1422556069340", name: opts.name ?? "Ann Lee", screen_name: opts.screenName ?? "annlee", protected: false, verified: false, followers_count: 10, friends_count: 20, statuses_count: 30, profile_image_url_https: "https://pbs.twimg.com/x.jpg" },
        [opts.forUserId]: { id: opts.forUserId, created_timestamp: "1400000000000", name: "Our Shop", screen_name: "ourshop", protected: false, verified: true, followers_count: 1000, friends_count: 1, statuses_count: 500, profile_image_url_https: "https://pbs.twimg.com/y.jpg" },
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
