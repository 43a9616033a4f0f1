/**
 * Loopback fake of TikTok's Content Posting API (open.tiktokapis.com; the Business Messaging side is
 * tiktok.fake.ts): `Authorization: Bearer`, answers `{data, error:{code, message, log_id}}` with code "ok".
 *
 *   POST /v2/post/publish/creator_info/query/   → {creator_username, privacy_level_options, …}
 *   POST /v2/post/publish/video/init/ {post_info, source_info PULL_FROM_URL|FILE_UPLOAD} → {publish_id, upload_url?}
 *   PUT  /upload/{publish_id}  Content-Range chunks (FILE_UPLOAD); the last chunk completes the upload
 *   POST /v2/post/publish/status/fetch/ {publish_id} → PROCESSING_DOWNLOAD|PROCESSING_UPLOAD (`processingPolls`) → PUBLISH_COMPLETE
 *   GET  /v2/user/info/?fields=…, POST /v2/video/list/?fields=…
 *
 * `fail(match, failure)` queues errors (`tiktokPostingErrors.*`), `dropAfter(match)` lets a call take effect
 * and drops the connection before the answer, `stall(match, ms)` answers late (timeouts), `failPublish` ends
 * processing in FAILED. Pulled videos finish processing by the time videos are listed.
 */
import { randomUUID } from "node:crypto";
import { failureResponse, FailureQueue, recordRequest, type InjectedFailure, type RecordedRequest } from "./fake-http";

const err = (status: number, code: string, message: string): InjectedFailure => ({
  kind: "response",
  status,
  body: { data: {}, error: { code, message, log_id: randomUUID() } },
});

export const tiktokPostingErrors = {
  tokenInvalid: () => err(401, "access_token_invalid", "The access token is invalid or not found in the request."),
  rateLimited: () => err(429, "rate_limit_exceeded", "API rate limit was exceeded."),
  invalidParams: () => err(400, "invalid_params", "The request parameters are invalid."),
  spamRisk: () => err(403, "spam_risk_too_many_posts", "The daily post cap from the API is reached for the current user."),
  serverError: () => err(500, "internal_error", "Something went wrong."),
};

export class TiktokPostingFake {
  readonly requests: RecordedRequest[] = [];
  readonly publishes = new Map<
    string,
    { postInfo: Record<string, unknown>; source: Record<string, unknown>; status: string; polls: number; received: number; postId?: string; chunks: string[] }
  >();
  processingPolls = 1;
  failPublish = false;
  privacyOptions = ["PUBLIC_TO_EVERYONE", "MUTUAL_FOLLOW_FRIENDS", "SELF_ONLY"];
  /** The platform's clock (create_time of videos). */
  now: () => Date = () => new Date();
  private failures = new FailureQueue();
  private drops: ((r: RecordedRequest) => boolean)[] = [];
  private stalls: { match: (r: RecordedRequest) => boolean; ms: number }[] = [];
  private next = 7_400_000_000_000_000_000n;
  private server: ReturnType<typeof Bun.serve>;

  private constructor(readonly token: string) {
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => this.handle(req) });
  }

  static start(opts: { token?: string } = {}): TiktokPostingFake {
    return new TiktokPostingFake(opts.token ?? "tt-publish-token");
  }

  get url(): string {
    return `http://${this.server.hostname}:${this.server.port}`;
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
  calls(): string[] {
    return this.requests.map((r) => `${r.method} ${r.path}`);
  }
  /** Published posts (PUBLISH_COMPLETE). */
  get posts(): string[] {
    return [...this.publishes.values()].filter((p) => p.postId).map((p) => p.postId!);
  }

  async stop(): Promise<void> {
    await this.server.stop(true);
  }

  private async handle(req: Request): Promise<Response> {
    const r = await recordRequest(req);
    this.requests.push(r);
    const failure = this.failures.take(r);
    if (failure) return failureResponse(failure);
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

  /** `"__int64:<digits>"` strings go out as bare JSON integers, as TikTok sends its int64 ids. */
  private ok(data: unknown): Response {
    const text = JSON.stringify({ data, error: { code: "ok", message: "", log_id: randomUUID() } }).replace(/"__int64:(\d+)"/g, "$1");
    return new Response(text, { headers: { "content-type": "application/json; charset=utf-8" } });
  }

  private route(r: RecordedRequest): Response {
    const upload = r.path.match(/^\/upload\/(.+)$/);
    if (upload && r.method === "PUT") {
      const p = this.publishes.get(decodeURIComponent(upload[1]!));
      const range = (r.headers["content-range"] ?? "").match(/^bytes (\d+)-(\d+)\/(\d+)$/);
      if (!p || !range) return new Response("bad upload", { status: 400 });
      const [first, last, total] = [Number(range[1]), Number(range[2]), Number(range[3])];
      if (r.raw.length !== last - first + 1 || total !== p.source.video_size || first !== p.received) return new Response("range mismatch", { status: 416 });
      p.received += r.raw.length;
      p.chunks.push(r.headers["content-range"]!);
      p.status = p.received === total ? "PROCESSING_UPLOAD" : "PROCESSING_UPLOAD";
      return new Response(null, { status: p.received === total ? 201 : 206 });
    }
    if (r.headers.authorization !== `Bearer ${this.token}`) return failureResponse(tiktokPostingErrors.tokenInvalid());
    const body = (r.body ?? {}) as Record<string, any>;
    if (r.method === "POST" && r.path === "/v2/post/publish/creator_info/query/")
      return this.ok({
        creator_avatar_url: "https://p16.tiktokcdn.com/a.jpeg",
        creator_username: "ourshop.tt",
        creator_nickname: "Our Shop",
        privacy_level_options: this.privacyOptions,
        comment_disabled: false,
        duet_disabled: false,
        stitch_disabled: true,
        max_video_post_duration_sec: 600,
      });
    if (r.method === "POST" && r.path === "/v2/post/publish/video/init/") {
      const source = body.source_info ?? {};
      if (!body.post_info?.privacy_level || !this.privacyOptions.includes(body.post_info.privacy_level))
        return failureResponse(tiktokPostingErrors.invalidParams());
      if (
        source.source === "PULL_FROM_URL"
          ? !source.video_url
          : !(source.source === "FILE_UPLOAD" && source.video_size > 0 && source.chunk_size > 0 && source.total_chunk_count >= 1)
      )
        return failureResponse(tiktokPostingErrors.invalidParams());
      const id = `v_pub_${source.source === "PULL_FROM_URL" ? "url" : "file"}~v2-1.${this.next++}`;
      this.publishes.set(id, {
        postInfo: body.post_info,
        source,
        status: source.source === "PULL_FROM_URL" ? "PROCESSING_DOWNLOAD" : "PROCESSING_UPLOAD",
        polls: 0,
        received: 0,
        chunks: [],
      });
      return this.ok(source.source === "FILE_UPLOAD" ? { publish_id: id, upload_url: `${this.url}/upload/${encodeURIComponent(id)}` } : { publish_id: id });
    }
    if (r.method === "POST" && r.path === "/v2/post/publish/status/fetch/") {
      const p = this.publishes.get(String(body.publish_id ?? ""));
      if (!p) return failureResponse(tiktokPostingErrors.invalidParams());
      const uploaded = p.source.source === "PULL_FROM_URL" || p.received === p.source.video_size;
      if (uploaded && !p.postId && p.status !== "FAILED") {
        p.polls++;
        if (p.polls > this.processingPolls) {
          if (this.failPublish) p.status = "FAILED";
          else {
            p.status = "PUBLISH_COMPLETE";
            p.postId = String(this.next++);
          }
        }
      }
      return this.ok({
        status: p.status,
        ...(p.status === "FAILED" ? { fail_reason: "video_pull_failed" } : {}),
        ...(p.postId ? { publicaly_available_post_id: [`__int64:${p.postId}`] } : {}),
        uploaded_bytes: p.received,
      });
    }
    if (r.method === "GET" && r.path === "/v2/user/info/")
      return this.ok({ user: { open_id: "open-1", username: "ourshop.tt", display_name: "Our Shop", follower_count: 8800 } });
    if (r.method === "POST" && r.path === "/v2/video/list/") {
      // Processing goes on whether or not anyone polls: by the time videos are listed, pulled ones are done.
      for (const p of this.publishes.values())
        if (p.source.source === "PULL_FROM_URL" && !p.postId && !this.failPublish) {
          p.status = "PUBLISH_COMPLETE";
          p.postId = String(this.next++);
        }
    }
    if (r.method === "POST" && r.path === "/v2/video/list/")
      return this.ok({
        videos: this.posts.map((id, i) => ({
          id,
          title: "",
          video_description: String([...this.publishes.values()].find((p) => p.postId === id)?.postInfo.title ?? ""),
          create_time: Math.floor(this.now().getTime() / 1000) - i,
          share_url: `https://www.tiktok.com/@ourshop.tt/video/${id}`,
          view_count: 1000,
          like_count: 80,
          comment_count: 6,
          share_count: 4,
        })),
        cursor: 0,
        has_more: false,
      });
    return failureResponse(err(404, "invalid_params", `unknown ${r.method} ${r.path}`));
  }
}
