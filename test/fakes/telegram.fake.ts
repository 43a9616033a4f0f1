/**
 * Loopback fake of the Telegram Bot API (`POST /bot<token>/<method>`, JSON or multipart), for adapter
 * tests and for end-to-end tests of the compiled appliance (`base_url = fake.url`).
 *
 * - Every request is recorded (`requests`, `calls(method)`).
 * - `fail(...)` queues one injected failure: Telegram's own error bodies (`telegramErrors.*`), any HTTP
 *   answer, or a dropped connection.
 * - `queueUpdate(...)` feeds getUpdates long polling (a held getUpdates returns as soon as an update
 *   arrives; confirmed updates — below the offset asked for — are forgotten, as Telegram does).
 * - setWebhook is remembered; `deliverWebhook(update)` POSTs to the registered URL with the registered
 *   secret header, `pushWebhook(...)` to any URL with any secret (for forgery tests).
 */
import { failureResponse, FailureQueue, json, recordRequest, type InjectedFailure, type RecordedFile, type RecordedRequest } from "./fake-http";

export const telegramErrors = {
  blocked: () => tgError(403, "Forbidden: bot was blocked by the user"),
  deactivated: () => tgError(403, "Forbidden: user is deactivated"),
  chatNotFound: () => tgError(400, "Bad Request: chat not found"),
  wrongFileId: () => tgError(400, "Bad Request: wrong file identifier/HTTP URL specified"),
  unauthorized: () => tgError(401, "Unauthorized"),
  tooManyRequests: (retryAfter: number) => tgError(429, `Too Many Requests: retry after ${retryAfter}`, { retry_after: retryAfter }),
  conflictWebhookActive: () => tgError(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"),
  serverError: () => tgError(502, "Bad Gateway"),
};

function tgError(code: number, description: string, parameters?: Record<string, unknown>): InjectedFailure {
  const body: Record<string, unknown> = { ok: false, error_code: code, description };
  if (parameters) body.parameters = parameters;
  return { kind: "response", status: code, body };
}

export interface WebhookRegistration {
  url: string;
  secret_token?: string;
  allowed_updates?: string[];
}

export class TelegramFake {
  readonly requests: RecordedRequest[] = [];
  webhook: WebhookRegistration | undefined;
  private failures = new FailureQueue();
  private updates: Record<string, unknown>[] = [];
  private nextUpdateId = 100_000;
  private nextMessageId = 1;
  private nextFileId = 1;
  private waiters = new Set<() => void>();
  private server: ReturnType<typeof Bun.serve>;

  private constructor(
    readonly token: string,
    opts: { port?: number; hostname?: string },
  ) {
    this.server = Bun.serve({ port: opts.port ?? 0, hostname: opts.hostname ?? "127.0.0.1", idleTimeout: 0, fetch: (req) => this.handle(req) });
  }

  static start(opts: { token?: string; port?: number; hostname?: string } = {}): TelegramFake {
    return new TelegramFake(opts.token ?? "123456:TEST-token", opts);
  }

  /** The `base_url` to configure. */
  get url(): string {
    return `http://${this.server.hostname}:${this.server.port}`;
  }
  get port(): number {
    return this.server.port!;
  }

  /** Requests for one Bot API method (`sendMessage`, `getUpdates`, ...). */
  calls(method: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path.endsWith(`/${method}`));
  }

  /** Serve `failure` to the next call of `method` (or of any method with "*"). */
  fail(method: string, failure: InjectedFailure): void {
    this.failures.push((r) => method === "*" || r.path.endsWith(`/${method}`), failure);
  }

  /** Callback query ids handed out by callbackQuery() and not answered yet. */
  readonly callbackQueries = new Set<string>();
  private nextCallbackId = 4_382_000_000_000_000;

  /**
   * The update Telegram sends when `from` taps the inline button `data` of `message` (a message the bot sent,
   * as sendMessage returned it): core.telegram.org/bots/api#callbackquery. Its id must then be answered.
   */
  callbackQuery(opts: {
    from: { id: number; first_name?: string; username?: string };
    message: Record<string, unknown>;
    data: string;
  }): Record<string, unknown> {
    const id = String(this.nextCallbackId++);
    this.callbackQueries.add(id);
    return {
      callback_query: {
        id,
        from: { is_bot: false, language_code: "en", ...opts.from },
        message: opts.message,
        chat_instance: "-3624557399328376127",
        data: opts.data,
      },
    };
  }

  /** Add an update for getUpdates; `update_id` is assigned when absent. Returns the full update. */
  queueUpdate(update: Record<string, unknown>): Record<string, unknown> {
    const full = { update_id: this.nextUpdateId++, ...update };
    if (typeof full.update_id === "number" && full.update_id >= this.nextUpdateId) this.nextUpdateId = full.update_id + 1;
    this.updates.push(full);
    for (const wake of [...this.waiters]) wake();
    return full;
  }

  /** Forgets every update not confirmed yet (a test that stopped its poller before confirming leaves some). */
  clearUpdates(): void {
    this.updates = [];
  }

  /** Updates not yet confirmed by a later getUpdates offset. */
  get pendingUpdates(): Record<string, unknown>[] {
    return [...this.updates];
  }

  /** POST an update to the URL registered by setWebhook, with its secret, as Telegram does. */
  async deliverWebhook(update: Record<string, unknown>): Promise<Response> {
    if (!this.webhook) throw new Error("telegram fake: no webhook registered");
    const full = { update_id: this.nextUpdateId++, ...update };
    return TelegramFake.pushWebhook({ url: this.webhook.url, update: full, secretToken: this.webhook.secret_token });
  }

  static async pushWebhook(opts: { url: string; update: Record<string, unknown>; secretToken?: string }): Promise<Response> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (opts.secretToken !== undefined) headers["X-Telegram-Bot-Api-Secret-Token"] = opts.secretToken;
    return fetch(opts.url, { method: "POST", headers, body: JSON.stringify(opts.update) });
  }

  async stop(): Promise<void> {
    for (const wake of [...this.waiters]) wake();
    await this.server.stop(true);
  }

  // ------------------------------------------------------------------ protocol

  private async handle(req: Request): Promise<Response> {
    const recorded = await recordRequest(req);
    this.requests.push(recorded);
    const match = recorded.path.match(/^\/bot([^/]+)\/(\w+)$/);
    if (!match) return json({ ok: false, error_code: 404, description: "Not Found" }, 404);
    const failure = this.failures.take(recorded);
    if (failure) return failureResponse(failure);
    const [, token, method] = match;
    if (token !== this.token) return json({ ok: false, error_code: 401, description: "Unauthorized" }, 401);
    const params = { ...Object.fromEntries(recorded.query), ...((recorded.body as Record<string, unknown>) ?? {}) };

    switch (method) {
      case "getMe":
        return ok({ id: Number(this.token.split(":")[0]), is_bot: true, first_name: "Test Bot", username: "test_bot" });
      case "setWebhook":
        this.webhook = {
          url: String(params.url),
          secret_token: params.secret_token as string | undefined,
          allowed_updates: parseMaybeJson(params.allowed_updates) as string[] | undefined,
        };
        return ok(true);
      case "deleteWebhook":
        this.webhook = undefined;
        return ok(true);
      case "getWebhookInfo":
        return ok({ url: this.webhook?.url ?? "", has_custom_certificate: false, pending_update_count: this.updates.length });
      case "getUpdates":
        return this.getUpdates(params, req.signal);
      case "sendMessage": {
        // Telegram returns the sent message with its inline keyboard, as a later callback_query shows it too.
        const markup = parseMaybeJson(params.reply_markup);
        return ok({ ...this.baseMessage(params), text: params.text, ...(markup ? { reply_markup: markup } : {}) });
      }
      case "answerCallbackQuery": {
        // core.telegram.org/bots/api#answercallbackquery: true on success; an unknown or late id is a 400.
        const id = params.callback_query_id;
        if (typeof id !== "string" || !this.callbackQueries.has(id))
          return json({ ok: false, error_code: 400, description: "Bad Request: query is too old and response timeout expired or query ID is invalid" }, 400);
        this.callbackQueries.delete(id);
        return ok(true);
      }
      case "sendPhoto":
      case "sendDocument":
      case "sendVideo":
      case "sendAudio":
      case "sendVoice":
        return ok({ ...this.baseMessage(params), ...this.mediaResult(method, params) });
      default:
        return json({ ok: false, error_code: 404, description: "Not Found: method not found" }, 404);
    }
  }

  private async getUpdates(params: Record<string, unknown>, signal: AbortSignal): Promise<Response> {
    if (this.webhook) return failureResponse(telegramErrors.conflictWebhookActive());
    const offset = params.offset !== undefined ? Number(params.offset) : undefined;
    if (offset !== undefined) this.updates = this.updates.filter((u) => (u.update_id as number) >= offset);
    const timeoutS = Number(params.timeout ?? 0);
    if (this.updates.length === 0 && timeoutS > 0) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, timeoutS * 1000);
        this.waiters.add(wake);
        signal.addEventListener("abort", wake, { once: true });
      });
    }
    const limit = Number(params.limit ?? 100);
    return ok(this.updates.slice(0, limit));
  }

  private baseMessage(params: Record<string, unknown>) {
    const chatId = Number(params.chat_id);
    const message: Record<string, unknown> = {
      message_id: this.nextMessageId++,
      from: { id: Number(this.token.split(":")[0]), is_bot: true, first_name: "Test Bot", username: "test_bot" },
      chat: { id: chatId, type: "private" },
      date: Math.floor(Date.now() / 1000),
    };
    const reply = parseMaybeJson(params.reply_parameters) as { message_id?: number } | undefined;
    if (reply?.message_id) message.reply_to_message = { message_id: reply.message_id, chat: { id: chatId, type: "private" }, date: message.date };
    if (params.caption) message.caption = params.caption;
    return message;
  }

  private mediaResult(method: string, params: Record<string, unknown>): Record<string, unknown> {
    const field = { sendPhoto: "photo", sendDocument: "document", sendVideo: "video", sendAudio: "audio", sendVoice: "voice" }[method]!;
    const given = params[field];
    const upload = typeof given === "object" && given !== null && (given as RecordedFile).file ? (given as RecordedFile) : undefined;
    // A string that is not a URL is a file_id: Telegram answers with that same id.
    const fileId = typeof given === "string" && !/^https?:\/\//.test(given) ? given : `${field.toUpperCase()}-file-${this.nextFileId++}`;
    if (field === "photo") {
      return {
        photo: [
          { file_id: `${fileId}-thumb`, file_unique_id: `u${fileId}t`, width: 90, height: 60 },
          { file_id: fileId, file_unique_id: `u${fileId}`, width: 1280, height: 853 },
        ],
      };
    }
    return { [field]: { file_id: fileId, file_unique_id: `u${fileId}`, file_name: upload?.filename, mime_type: upload?.type, file_size: upload?.size } };
  }
}

function ok(result: unknown): Response {
  return json({ ok: true, result });
}

function parseMaybeJson(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
