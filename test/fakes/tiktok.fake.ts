/**
 * Loopback fake of TikTok Business Messaging (API for Business v1.3):
 * `POST /open_api/v1.3/business/message/send/` and `…/media/upload/`, header `Access-Token`, answers
 * `{code, message, request_id, data}` — errors are a non-zero `code` with HTTP 200, as TikTok does.
 *
 * `fail(path, failure)` queues `tiktokErrors.*`, any HTTP answer or a dropped connection.
 * `pushWebhook(...)` sends a correctly signed (`Tiktok-Signature: t=…,s=…`) webhook to any URL;
 * `messageWebhookBody(...)` builds a real-shaped `im_receive_msg`.
 */
import { createHmac, randomUUID } from "node:crypto";
import { failureResponse, FailureQueue, json, recordRequest, type InjectedFailure, type RecordedFile, type RecordedRequest } from "./fake-http";

const code = (c: number, message: string): InjectedFailure => ({
  kind: "response",
  status: 200,
  body: { code: c, message, request_id: randomUUID(), data: {} },
});

export const tiktokErrors = {
  tokenInvalid: () => code(40105, "Access token is incorrect or has been revoked."),
  tooManyRequests: () => code(40100, "Too many requests. Please retry in some time."),
  noPermission: () => code(40001, "No permission to operate."),
  /** [unsure] a messaging-specific refusal; the real code is not public. */
  windowClosed: () => code(40051, "The conversation is outside the messaging window."),
  systemError: () => code(50000, "System error"),
  http500: (): InjectedFailure => ({ kind: "response", status: 500, body: "Internal Server Error" }),
};

export class TiktokFake {
  readonly requests: RecordedRequest[] = [];
  private failures = new FailureQueue();
  private nextId = 1;
  private server: ReturnType<typeof Bun.serve>;

  private constructor(
    readonly accessToken: string,
    opts: { port?: number; hostname?: string },
  ) {
    this.server = Bun.serve({ port: opts.port ?? 0, hostname: opts.hostname ?? "127.0.0.1", fetch: (req) => this.handle(req) });
  }

  static start(opts: { accessToken?: string; port?: number; hostname?: string } = {}): TiktokFake {
    return new TiktokFake(opts.accessToken ?? "tt-access-token", opts);
  }

  get url(): string {
    return `http://${this.server.hostname}:${this.server.port}`;
  }
  get port(): number {
    return this.server.port!;
  }

  /** `path`: "send" or "upload" (or "*"). */
  fail(path: "send" | "upload" | "*", failure: InjectedFailure): void {
    this.failures.push((r) => path === "*" || r.path.includes(path === "send" ? "/message/send/" : "/media/upload/"), failure);
  }

  async stop(): Promise<void> {
    await this.server.stop(true);
  }

  private async handle(req: Request): Promise<Response> {
    const recorded = await recordRequest(req);
    this.requests.push(recorded);
    const failure = this.failures.take(recorded);
    if (failure) return failureResponse(failure);
    if (recorded.headers["access-token"] !== this.accessToken) return failureResponse(tiktokErrors.tokenInvalid());
    const ok = (data: unknown) => json({ code: 0, message: "OK", request_id: randomUUID(), data });
    const body = (recorded.body ?? {}) as Record<string, unknown>;
    if (recorded.method === "POST" && recorded.path === "/open_api/v1.3/business/message/send/") {
      if (body.recipient_type !== "CONVERSATION" || typeof body.recipient !== "string" || !body.business_id)
        return failureResponse(code(40002, "Invalid parameters"));
      return ok({ message: { message_id: `msg-${this.nextId++}` } });
    }
    if (recorded.method === "POST" && recorded.path === "/open_api/v1.3/business/message/media/upload/") {
      const file = body.file as RecordedFile | undefined;
      if (!file?.file || body.media_type !== "IMAGE") return failureResponse(code(40002, "Invalid parameters: file"));
      return ok({ media_id: `media-${this.nextId++}` });
    }
    return json({ code: 40400, message: "Not found", request_id: randomUUID(), data: {} }, 404);
  }

  // ------------------------------------------------------------------ webhook side (TikTok → appliance)

  static sign(opts: { clientSecret: string; timestamp: number; raw: string }): string {
    return `t=${opts.timestamp},s=${createHmac("sha256", opts.clientSecret).update(`${opts.timestamp}.${opts.raw}`).digest("hex")}`;
  }

  /** POST a webhook body signed at `timestamp` (unix seconds, default now); `signature` overrides the header (null: none). */
  static async pushWebhook(opts: { url: string; body: unknown; clientSecret: string; timestamp?: number; signature?: string | null }): Promise<Response> {
    const raw = JSON.stringify(opts.body);
    const timestamp = opts.timestamp ?? Math.floor(Date.now() / 1000);
    const signature = opts.signature === undefined ? TiktokFake.sign({ clientSecret: opts.clientSecret, timestamp, raw }) : opts.signature;
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (signature !== null) headers["Tiktok-Signature"] = signature;
    return fetch(opts.url, { method: "POST", headers, body: raw });
  }

  static messageWebhookBody(opts: {
    businessId: string;
    userId: string;
    conversationId: string;
    text?: string;
    imageMediaId?: string;
    messageId?: string;
    timestampMs?: number;
    event?: string;
    direction?: "in" | "out";
  }): TiktokWebhookShape {
    const incoming = opts.direction !== "out";
    const content: Record<string, unknown> = {
      conversation_id: opts.conversationId,
      message_id: opts.messageId ?? `m-${randomUUID()}`,
      timestamp: opts.timestampMs ?? Date.now(),
      from_user: { id: incoming ? opts.userId : opts.businessId, role: incoming ? "personal_account" : "business_account" },
      to_user: { id: incoming ? opts.businessId : opts.userId, role: incoming ? "business_account" : "personal_account" },
    };
    if (opts.imageMediaId) Object.assign(content, { type: "image", image: { media_id: opts.imageMediaId } });
    else Object.assign(content, { type: "text", text: { body: opts.text ?? "" } });
    return {
      client_key: "aw-test-client",
      event: opts.event ?? "im_receive_msg",
      create_time: Math.floor(Date.now() / 1000),
      user_openid: opts.businessId,
      content: JSON.stringify(content),
    };
  }
}

export interface TiktokWebhookShape {
  client_key: string;
  event: string;
  create_time: number;
  user_openid: string;
  content: string;
}
