/**
 * Loopback fake of the Graph API's publishing side (the messaging side is graph.fake.ts), for an Instagram
 * professional account and a Facebook Page, `base_url = fake.url` (the version prefix is part of it):
 *
 * Instagram
 *   POST /{ig}/media {image_url|media_type:"REELS",video_url|is_carousel_item|media_type:"CAROUSEL",children, caption} → {id}
 *   GET  /{container}?fields=status_code     IN_PROGRESS (`processingPolls` times) → FINISHED → PUBLISHED after media_publish
 *   POST /{ig}/media_publish {creation_id}   → {id}; a container publishes once (Graph answers error 9007 otherwise)
 *   GET  /{ig}/content_publishing_limit      → {data:[{quota_usage, config:{quota_total:50, quota_duration:86400}}]}
 *   GET  /{ig}/media?fields=…, /{media}?fields=permalink, /{ig}?fields=username,followers_count, insights
 * Facebook Page
 *   POST /{page}/feed {message, attached_media?} → {id:"<page>_<n>"}; POST /{page}/photos {url|source, caption, published} → {id, post_id?}
 *   GET  /{page}/published_posts?since=…, DELETE /{post} → {success:true}, GET /{page}?fields=…, insights
 *
 * Every call needs `Authorization: Bearer <token>` (else Graph error 190). `fail(match, failure)` queues
 * Graph errors, raw answers or dropped connections; `dropAfter(match)` lets the call take effect and then
 * drops the connection before the answer; `stall(match, ms)` answers late (timeouts). Nothing here imports production code.
 */
import { failureResponse, FailureQueue, json, recordRequest, type InjectedFailure, type RecordedRequest } from "./fake-http";

export const graphPublishErrors = {
  tokenExpired: (): InjectedFailure => ({
    kind: "response",
    status: 401,
    body: {
      error: { message: "Error validating access token: Session has expired", type: "OAuthException", code: 190, error_subcode: 463, fbtrace_id: "AbC" },
    },
  }),
  rateLimited: (): InjectedFailure => ({
    kind: "response",
    status: 400,
    body: { error: { message: "(#4) Application request limit reached", type: "OAuthException", code: 4, fbtrace_id: "AbC" } },
  }),
  invalidParameter: (message = "(#100) Invalid parameter"): InjectedFailure => ({
    kind: "response",
    status: 400,
    body: { error: { message, type: "OAuthException", code: 100, fbtrace_id: "AbC" } },
  }),
  serverError: (): InjectedFailure => ({
    kind: "response",
    status: 500,
    body: {
      error: {
        message: "An unexpected error has occurred. Please retry your request later.",
        type: "OAuthException",
        code: 2,
        is_transient: true,
        fbtrace_id: "AbC",
      },
    },
  }),
};

interface Container {
  id: string;
  params: Record<string, unknown>;
  polls: number;
  status: "IN_PROGRESS" | "FINISHED" | "ERROR" | "PUBLISHED";
}

export class GraphPublishFake {
  readonly requests: RecordedRequest[] = [];
  readonly containers = new Map<string, Container>();
  /** Published Instagram media. */
  readonly igMedia: { id: string; caption: string; containerId: string; timestamp: Date; mediaType: string }[] = [];
  /** Facebook Page posts (and unpublished photos, `published: false`). */
  readonly fbPosts: {
    id: string;
    message: string;
    createdAt: Date;
    published: boolean;
    deleted: boolean;
    photo?: { url?: string; bytes?: number };
    attached?: string[];
  }[] = [];
  /** IN_PROGRESS answers a container gives before FINISHED. */
  processingPolls = 1;
  /** Containers whose processing ends in ERROR. */
  failProcessing = false;
  quotaUsage = 0;
  /** The platform's clock (timestamps of posts); tests that drive the app's clock share it. */
  now: () => Date = () => new Date();
  private failures = new FailureQueue();
  private drops: ((r: RecordedRequest) => boolean)[] = [];
  private stalls: { match: (r: RecordedRequest) => boolean; ms: number }[] = [];
  private next = 17_900_000_000_000_000n;
  private server: ReturnType<typeof Bun.serve>;

  private constructor(readonly opts: { token: string; igUserId: string; pageId: string }) {
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => this.handle(req) });
  }

  static start(opts: Partial<{ token: string; igUserId: string; pageId: string }> = {}): GraphPublishFake {
    return new GraphPublishFake({
      token: opts.token ?? "graph-token",
      igUserId: opts.igUserId ?? "17841400000000001",
      pageId: opts.pageId ?? "104000000000001",
    });
  }

  /** `base_url` for the settings (version prefix included). */
  get url(): string {
    return `http://${this.server.hostname}:${this.server.port}/v23.0`;
  }

  fail(match: (r: RecordedRequest) => boolean, failure: InjectedFailure): void {
    this.failures.push(match, failure);
  }

  dropAfter(match: (r: RecordedRequest) => boolean): void {
    this.drops.push(match);
  }
  /** The next matching call takes effect, but its answer comes `ms` late (a client with a shorter timeout gives up). */
  stall(match: (r: RecordedRequest) => boolean, ms: number): void {
    this.stalls.push({ match, ms });
  }

  /** Requests without the version prefix: "POST /17841…/media". */
  calls(): string[] {
    return this.requests.map((r) => `${r.method} ${r.path.replace(/^\/v23\.0/, "")}`);
  }

  async stop(): Promise<void> {
    await this.server.stop(true);
  }

  private id(): string {
    return String(this.next++);
  }

  private async handle(req: Request): Promise<Response> {
    const r = await recordRequest(req);
    this.requests.push(r);
    const failure = this.failures.take(r);
    if (failure) return failureResponse(failure);
    if (r.headers.authorization !== `Bearer ${this.opts.token}`) return failureResponse(graphPublishErrors.tokenExpired());
    const answer = this.route(r);
    const stall = this.stalls.findIndex((x) => x.match(r));
    if (stall >= 0) await Bun.sleep(this.stalls.splice(stall, 1)[0]!.ms);
    const drop = this.drops.findIndex((m) => m(r));
    if (drop >= 0) {
      this.drops.splice(drop, 1);
      return failureResponse({ kind: "drop" });
    }
    return answer;
  }

  private route(r: RecordedRequest): Response {
    const path = r.path.replace(/^\/v23\.0/, "");
    const [, first, second] = path.split("/");
    const body = (r.body ?? {}) as Record<string, unknown>;
    const { igUserId: ig, pageId: page } = this.opts;

    // ---- Instagram
    if (first === ig) {
      if (r.method === "POST" && second === "media") {
        const carousel = body.media_type === "CAROUSEL";
        if (carousel) {
          const children = String(body.children ?? "")
            .split(",")
            .filter(Boolean);
          if (children.length < 2 || children.length > 10)
            return failureResponse(graphPublishErrors.invalidParameter("(#100) A carousel needs 2 to 10 children"));
          if (children.some((c) => this.containers.get(c)?.params.is_carousel_item !== true))
            return failureResponse(graphPublishErrors.invalidParameter("(#100) children must be carousel item containers"));
        } else if (!body.image_url && !(body.media_type === "REELS" || body.media_type === "VIDEO")) {
          return failureResponse(graphPublishErrors.invalidParameter("(#100) The parameter image_url is required"));
        }
        const id = this.id();
        this.containers.set(id, { id, params: body, polls: 0, status: "IN_PROGRESS" });
        return json({ id });
      }
      if (r.method === "POST" && second === "media_publish") {
        const c = this.containers.get(String(body.creation_id ?? ""));
        if (!c) return failureResponse(graphPublishErrors.invalidParameter("(#100) Invalid creation_id"));
        if (c.status === "PUBLISHED")
          return json(
            { error: { message: "The media has already been published", type: "OAuthException", code: 9007, error_subcode: 2207008, fbtrace_id: "AbC" } },
            400,
          );
        if (c.status !== "FINISHED")
          return json({ error: { message: "Media ID is not available", type: "OAuthException", code: 9007, error_subcode: 2207027, fbtrace_id: "AbC" } }, 400);
        if (this.quotaUsage >= 50)
          return json(
            { error: { message: "Application request limit reached", type: "OAuthException", code: 9, error_subcode: 2207042, fbtrace_id: "AbC" } },
            400,
          );
        c.status = "PUBLISHED";
        this.quotaUsage++;
        const id = this.id();
        this.igMedia.push({
          id,
          caption: String(c.params.caption ?? ""),
          containerId: c.id,
          timestamp: this.now(),
          mediaType: c.params.media_type === "CAROUSEL" ? "CAROUSEL_ALBUM" : c.params.video_url ? "VIDEO" : "IMAGE",
        });
        return json({ id });
      }
      if (r.method === "GET" && second === "content_publishing_limit")
        return json({ data: [{ quota_usage: this.quotaUsage, config: { quota_total: 50, quota_duration: 86400 } }] });
      if (r.method === "GET" && second === "media")
        return json({
          data: [...this.igMedia].reverse().map((m) => ({
            id: m.id,
            caption: m.caption,
            media_type: m.mediaType,
            permalink: `https://www.instagram.com/p/${m.id}/`,
            timestamp: m.timestamp.toISOString().replace(/\.\d{3}Z$/, "+0000"),
            like_count: 12,
            comments_count: 3,
          })),
          paging: { cursors: { before: "a", after: "b" } },
        });
      if (r.method === "GET" && second === "insights")
        return json({
          data: ["views", "reach", "total_interactions"].map((name, i) => ({
            name,
            period: "day",
            total_value: { value: [900, 600, 45][i] },
            id: `${ig}/insights/${name}/day`,
          })),
        });
      if (r.method === "GET" && !second) return json({ id: ig, username: "ourshop.ig", followers_count: 4321 });
    }
    const container = first ? this.containers.get(first) : undefined;
    if (container && r.method === "GET" && !second) {
      if (container.status === "IN_PROGRESS") {
        container.polls++;
        if (container.polls > this.processingPolls) container.status = this.failProcessing ? "ERROR" : "FINISHED";
        else return json({ status_code: "IN_PROGRESS", id: container.id });
      }
      return json({ status_code: container.status, id: container.id });
    }
    const media = this.igMedia.find((m) => m.id === first);
    if (media && r.method === "GET") {
      if (second === "insights")
        return json({ data: ["views", "reach", "shares"].map((name, i) => ({ name, period: "lifetime", values: [{ value: [300, 200, 4][i] }] })) });
      return json({ permalink: `https://www.instagram.com/p/${media.id}/`, id: media.id });
    }

    // ---- Facebook Page
    if (first === page) {
      if (r.method === "POST" && second === "feed") {
        if (!body.message && !body.attached_media && !body.link)
          return failureResponse(graphPublishErrors.invalidParameter("(#100) Missing message or attachment"));
        const attached = ((body.attached_media as { media_fbid?: string }[] | undefined) ?? []).map((a) => String(a.media_fbid));
        for (const a of attached)
          if (!this.fbPosts.some((p) => p.id === a && !p.published))
            return failureResponse(graphPublishErrors.invalidParameter(`(#100) media_fbid ${a} is not an unpublished photo of this Page`));
        const id = `${page}_${this.id()}`;
        this.fbPosts.push({ id, message: String(body.message ?? ""), createdAt: this.now(), published: true, deleted: false, attached });
        return json({ id });
      }
      if (r.method === "POST" && second === "photos") {
        const source = body.source as { size?: number } | undefined;
        if (!body.url && !source) return failureResponse(graphPublishErrors.invalidParameter("(#324) Requires upload file"));
        const published = String(body.published ?? "true") !== "false";
        const photoId = this.id();
        if (!published) {
          this.fbPosts.push({
            id: photoId,
            message: "",
            createdAt: this.now(),
            published: false,
            deleted: false,
            photo: { url: body.url as string | undefined, bytes: source?.size },
          });
          return json({ id: photoId });
        }
        const postId = `${page}_${this.id()}`;
        this.fbPosts.push({
          id: postId,
          message: String(body.caption ?? body.message ?? ""),
          createdAt: this.now(),
          published: true,
          deleted: false,
          photo: { url: body.url as string | undefined, bytes: source?.size },
        });
        return json({ id: photoId, post_id: postId });
      }
      if (r.method === "GET" && second === "published_posts") {
        const since = Number(r.query.get("since") ?? 0) * 1000;
        const rows = this.fbPosts.filter((p) => p.published && !p.deleted && p.createdAt.getTime() >= since).reverse();
        return json({
          data: rows.map((p) => ({
            id: p.id,
            message: p.message,
            created_time: p.createdAt.toISOString().replace(/\.\d{3}Z$/, "+0000"),
            permalink_url: `https://www.facebook.com/${p.id.replace("_", "/posts/")}`,
            shares: { count: 2 },
            reactions: { data: [], summary: { total_count: 17 } },
            comments: { data: [], summary: { total_count: 5 } },
          })),
        });
      }
      if (r.method === "GET" && !second) return json({ id: page, name: "Our Shop", username: "ourshop", followers_count: 2500, fan_count: 2400 });
    }
    const post = this.fbPosts.find((p) => p.id === first && !p.deleted);
    if (post && r.method === "DELETE") {
      post.deleted = true;
      return json({ success: true });
    }
    if (post && r.method === "GET" && second === "insights")
      return json({
        data: [
          { name: "post_impressions", period: "lifetime", values: [{ value: 800 }] },
          { name: "post_impressions_unique", period: "lifetime", values: [{ value: 640 }] },
        ],
      });
    return failureResponse(graphPublishErrors.invalidParameter(`(#803) Unsupported ${r.method} request. Object with ID '${first}' does not exist`));
  }
}
