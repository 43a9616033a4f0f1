/**
 * A Meta Graph API fake on loopback, speaking what our WhatsApp Cloud, Messenger and Instagram adapters
 * (and Meta's webhooks) speak:
 *
 * - `POST /{phone-number-id}/messages` (WhatsApp body: `messaging_product:"whatsapp"`) → `{messaging_product,
 *   contacts:[{input,wa_id}], messages:[{id:"wamid.…"}]}`; mark-read bodies → `{success:true}`
 * - `POST /{id}/messages` (Send API body, JSON or multipart with `filedata`) → `{recipient_id, message_id:"m_…"}`
 *   (+ `attachment_id` when the attachment is reusable)
 * - `POST /{phone-number-id}/media` (multipart `file`,`type`,`messaging_product`) → `{id}`
 * - `POST /{page-id}/message_attachments` → `{attachment_id}`
 * - `GET /{waba-id}/message_templates` → `{data, paging:{cursors:{before,after}, next}}` in pages of `templatePageSize`
 * - `POST /{waba-id}/message_templates` (name, language, category, components) → `{id, status:"PENDING", category}`;
 *   the template joins `templates` (PENDING). Refused like Meta: a param without its example (#100, subcode
 *   2388043), a name+language that exists (#100, subcode 2388024)
 * - `DELETE /{waba-id}/message_templates?name=…[&hsm_id=…]` → `{success:true}`; no such template → #100
 * - template webhooks: `whatsappPayloads.templateStatus` / `templateQuality` (fields `message_template_status_update`,
 *   `message_template_quality_update`), pushed with `pushWebhook`
 *
 * Every request is recorded (method, path, headers, parsed body, raw bytes). Tests queue failures: Graph
 * error bodies with the HTTP status Graph uses, raw 429/5xx answers, and dropped connections; and async
 * failures: the next WhatsApp send succeeds, then a signed `failed` status webhook is pushed to the
 * configured webhook target. `pushWebhook` signs any payload with `X-Hub-Signature-256` (or deliberately
 * not). The version prefix (`/v23.0`) is part of `url`, so `base_url = fake.url`.
 *
 * Reusable by end-to-end tests against the compiled binary: nothing here imports production code.
 */
import { createHmac, randomBytes } from "node:crypto";
import { FailureQueue, json, recordRequest, type RecordedRequest } from "./fake-http";

export type { RecordedFile, RecordedRequest } from "./fake-http";

// ---------------------------------------------------------------- payload builders

type Json = Record<string, unknown>;

/** Graph's error body. `graphError({code:131047})` → `{"error":{"message":"(#131047) …","type":"OAuthException","code":131047,…}}`. */
export function graphErrorBody({
  code,
  subcode,
  message,
  type = "OAuthException",
  details,
}: {
  code: number;
  subcode?: number;
  message?: string;
  type?: string;
  details?: string;
}): Json {
  return {
    error: {
      message: message ?? `(#${code}) ${GRAPH_ERROR_TITLES[code] ?? "Error"}`,
      type,
      code,
      ...(subcode !== undefined ? { error_subcode: subcode } : {}),
      ...(details ? { error_data: { messaging_product: "whatsapp", details } } : {}),
      fbtrace_id: `A${randomBytes(8).toString("hex")}`,
    },
  };
}

/**
 * The HTTP status Graph answers a given error code with: 401 for a bad token, 5xx for its transient codes,
 * 400 for everything else — throttling included. [unsure] Some integrations report 429 for 130429/80007/4;
 * the adapters map by code, so tests cover both with an explicit `status`.
 */
export function graphErrorStatus(code: number): number {
  if (code === 190) return 401;
  if (code === 1 || code === 2 || code === 131000 || code === 131016 || code === 133004) return 500;
  return 400;
}

const GRAPH_ERROR_TITLES: Record<number, string> = {
  4: "Application request limit reached",
  10: "This message is sent outside of allowed window.",
  100: "Invalid parameter",
  190: "Invalid OAuth access token - Cannot parse access token",
  551: "This person isn't available right now.",
  613: "Calls to this api have exceeded the rate limit.",
  130429: "Rate limit hit",
  131026: "Message undeliverable",
  131047: "Re-engagement message",
  131056: "(Business Account, Consumer Account) pair rate limit hit",
  132000: "Number of parameters does not match the expected number of params",
  132001: "Template name does not exist in the translation",
  132015: "Template is paused",
  132016: "Template is disabled",
  80007: "Rate limit issues",
};

const nowSeconds = () => String(Math.floor(Date.now() / 1000));

export const whatsappPayloads = {
  /** Wraps a `value` in the `whatsapp_business_account` envelope. */
  envelope({ wabaId = "WABA_ID", value }: { wabaId?: string; value: Json }): Json {
    return {
      object: "whatsapp_business_account",
      entry: [{ id: wabaId, changes: [{ value: { messaging_product: "whatsapp", ...value }, field: "messages" }] }],
    };
  },
  metadata({ phoneNumberId, displayPhoneNumber = "15550001111" }: { phoneNumberId: string; displayPhoneNumber?: string }): Json {
    return { display_phone_number: displayPhoneNumber, phone_number_id: phoneNumberId };
  },
  /** An inbound message of any type: pass the type-keyed object in `message` (e.g. `{type:"image", image:{…}}`). */
  inbound({
    phoneNumberId,
    wabaId,
    from,
    name = "Test User",
    id = `wamid.${randomId()}`,
    timestamp = nowSeconds(),
    message,
    context,
    referral,
  }: {
    phoneNumberId: string;
    wabaId?: string;
    from: string;
    name?: string;
    id?: string;
    timestamp?: string;
    message: Json;
    context?: { from?: string; id: string };
    referral?: Json;
  }): Json {
    return whatsappPayloads.envelope({
      wabaId,
      value: {
        metadata: whatsappPayloads.metadata({ phoneNumberId }),
        contacts: [{ profile: { name }, wa_id: from }],
        messages: [{ from, id, timestamp, ...message, ...(context ? { context } : {}), ...(referral ? { referral } : {}) }],
      },
    });
  },
  text(args: {
    phoneNumberId: string;
    from: string;
    text: string;
    name?: string;
    id?: string;
    timestamp?: string;
    context?: { from?: string; id: string };
    referral?: Json;
  }): Json {
    const { text, ...rest } = args;
    return whatsappPayloads.inbound({ ...rest, message: { type: "text", text: { body: text } } });
  },
  /**
   * A tap on a reply button or list row of our interactive message `contextId` (Meta's documented
   * `interactive.button_reply` / `list_reply` webhook examples).
   */
  tap(args: {
    phoneNumberId: string;
    from: string;
    contextId: string;
    kind: "button_reply" | "list_reply";
    reply: { id: string; title: string; description?: string };
    id?: string;
  }): Json {
    const { contextId, kind, reply, ...rest } = args;
    return whatsappPayloads.inbound({
      ...rest,
      context: { from: "15550001111", id: contextId },
      message: { type: "interactive", interactive: { type: kind, [kind]: reply } },
    });
  },
  /** A status update; `errors` only on `failed`. */
  status({
    phoneNumberId,
    wabaId,
    id,
    status,
    recipientId,
    timestamp = nowSeconds(),
    errors,
  }: {
    phoneNumberId: string;
    wabaId?: string;
    id: string;
    status: "sent" | "delivered" | "read" | "failed";
    recipientId: string;
    timestamp?: string;
    errors?: { code: number; title: string; message?: string; details?: string }[];
  }): Json {
    const pricing =
      status === "failed"
        ? {}
        : { conversation: { id: randomId(), origin: { type: "service" } }, pricing: { billable: true, pricing_model: "PMP", category: "service" } };
    return whatsappPayloads.envelope({
      wabaId,
      value: {
        metadata: whatsappPayloads.metadata({ phoneNumberId }),
        statuses: [
          {
            id,
            status,
            timestamp,
            recipient_id: recipientId,
            ...pricing,
            ...(errors
              ? { errors: errors.map((e) => ({ code: e.code, title: e.title, message: e.message ?? e.title, error_data: { details: e.details ?? e.title } })) }
              : {}),
          },
        ],
      },
    });
  },
  /**
   * `message_template_status_update` (Meta's webhook reference): `event` APPROVED | REJECTED | PENDING |
   * PAUSED | DISABLED | …, `reason` NONE unless rejected (e.g. INVALID_FORMAT).
   */
  templateStatus({
    wabaId = "WABA_ID",
    id,
    name,
    language = "en_US",
    event,
    reason = "NONE",
    category = "UTILITY",
  }: {
    wabaId?: string;
    id: number | string;
    name: string;
    language?: string;
    event: string;
    reason?: string;
    category?: string;
  }): Json {
    return templateChange(wabaId, "message_template_status_update", {
      event,
      message_template_id: Number(id),
      message_template_name: name,
      message_template_language: language,
      reason,
      message_template_category: category,
    });
  },
  /** `message_template_quality_update`: GREEN | YELLOW | RED | UNKNOWN. */
  templateQuality({
    wabaId = "WABA_ID",
    id,
    name,
    language = "en_US",
    previous = "UNKNOWN",
    score,
  }: {
    wabaId?: string;
    id: number | string;
    name: string;
    language?: string;
    previous?: string;
    score: string;
  }): Json {
    return templateChange(wabaId, "message_template_quality_update", {
      previous_quality_score: previous,
      new_quality_score: score,
      message_template_id: Number(id),
      message_template_name: name,
      message_template_language: language,
    });
  },
};

/** A WhatsApp Business Account webhook with one change of `field` (the template status and quality updates). */
function templateChange(wabaId: string, field: string, value: Json): Json {
  return { object: "whatsapp_business_account", entry: [{ id: wabaId, time: Math.floor(Date.now() / 1000), changes: [{ value, field }] }] };
}

/** Messenger (`object:"page"`) and Instagram (`object:"instagram"`) messaging webhooks. */
function messagingPayloads(object: "page" | "instagram") {
  const envelope = ({ accountId, items }: { accountId: string; items: Json[] }): Json => ({
    object,
    entry: [{ id: accountId, time: Date.now(), messaging: items }],
  });
  return {
    envelope,
    /** An inbound message; give `text` and/or `attachments` (`[{type:"image", payload:{url}}]`). */
    message({
      accountId,
      senderId,
      mid = `m_${randomId()}`,
      text,
      attachments,
      timestamp = Date.now(),
      replyTo,
      referral,
      isEcho,
    }: {
      accountId: string;
      senderId: string;
      mid?: string;
      text?: string;
      attachments?: Json[];
      timestamp?: number;
      replyTo?: string;
      referral?: Json;
      isEcho?: boolean;
    }): Json {
      // An echo is our own message: the account is the sender.
      const sender = isEcho ? accountId : senderId;
      const recipient = isEcho ? senderId : accountId;
      return envelope({
        accountId,
        items: [
          {
            sender: { id: sender },
            recipient: { id: recipient },
            timestamp,
            message: {
              mid,
              ...(isEcho ? { is_echo: true } : {}),
              ...(text !== undefined ? { text } : {}),
              ...(attachments ? { attachments } : {}),
              ...(replyTo ? { reply_to: { mid: replyTo } } : {}),
              ...(referral ? { referral } : {}),
            },
          },
        ],
      });
    },
    postback({
      accountId,
      senderId,
      title,
      payload,
      mid = `m_${randomId()}`,
      timestamp = Date.now(),
      referral,
    }: {
      accountId: string;
      senderId: string;
      title: string;
      payload: string;
      mid?: string;
      timestamp?: number;
      referral?: Json;
    }): Json {
      return envelope({
        accountId,
        items: [{ sender: { id: senderId }, recipient: { id: accountId }, timestamp, postback: { mid, title, payload, ...(referral ? { referral } : {}) } }],
      });
    },
    referral({ accountId, senderId, referral, timestamp = Date.now() }: { accountId: string; senderId: string; referral: Json; timestamp?: number }): Json {
      return envelope({ accountId, items: [{ sender: { id: senderId }, recipient: { id: accountId }, timestamp, referral }] });
    },
    /**
     * A tap on one of our quick replies (developers.facebook.com/docs/messenger-platform/send-messages/quick-replies):
     * the text is the quick reply's title, `quick_reply.payload` the payload we gave it.
     */
    quickReply({
      accountId,
      senderId,
      title,
      payload,
      mid = `m_${randomId()}`,
      timestamp = Date.now(),
      replyTo,
    }: {
      accountId: string;
      senderId: string;
      title: string;
      payload: string;
      mid?: string;
      timestamp?: number;
      replyTo?: string;
    }): Json {
      return envelope({
        accountId,
        items: [
          {
            sender: { id: senderId },
            recipient: { id: accountId },
            timestamp,
            message: { mid, text: title, quick_reply: { payload }, ...(replyTo ? { reply_to: { mid: replyTo } } : {}) },
          },
        ],
      });
    },
    /** Messenger only (`message_deliveries`). */
    delivery({ accountId, senderId, watermark, mids }: { accountId: string; senderId: string; watermark: number; mids?: string[] }): Json {
      return envelope({ accountId, items: [{ sender: { id: senderId }, recipient: { id: accountId }, delivery: { ...(mids ? { mids } : {}), watermark } }] });
    },
    /** Messenger `message_reads`: `read.watermark`. */
    read({ accountId, senderId, watermark, timestamp = Date.now() }: { accountId: string; senderId: string; watermark: number; timestamp?: number }): Json {
      return envelope({ accountId, items: [{ sender: { id: senderId }, recipient: { id: accountId }, timestamp, read: { watermark } }] });
    },
    /** Instagram `messaging_seen`: `read.mid` and the event timestamp. */
    seen({ accountId, senderId, mid, timestamp = Date.now() }: { accountId: string; senderId: string; mid: string; timestamp?: number }): Json {
      return envelope({ accountId, items: [{ sender: { id: senderId }, recipient: { id: accountId }, timestamp, read: { mid } }] });
    },
  };
}

export const messengerPayloads = messagingPayloads("page");
export const instagramPayloads = messagingPayloads("instagram");

/** A Meta-format template as `GET /{waba}/message_templates` lists it. */
export function metaTemplate({
  name,
  language = "en_US",
  status = "APPROVED",
  category = "UTILITY",
  components,
}: {
  name: string;
  language?: string;
  status?: string;
  category?: string;
  components?: Json[];
}): Json {
  return {
    id: String(1_000_000 + Math.floor(Math.random() * 1_000_000)),
    name,
    language,
    status,
    category,
    components: components ?? [{ type: "BODY", text: "Hello {{1}}", example: { body_text: [["Ann"]] } }],
  };
}

/** `sha256=<hex HMAC-SHA256(appSecret, body)>` — the header Meta puts on webhook POSTs. */
export function hubSignature({ appSecret, body }: { appSecret: string; body: string | Uint8Array }): string {
  return `sha256=${createHmac("sha256", appSecret).update(body).digest("hex")}`;
}

function randomId(): string {
  return randomBytes(12).toString("hex");
}

function waMessageId(): string {
  // Real ids are base64 of an internal id: "wamid.HBgL…". The shape, not the content, is what matters.
  return `wamid.${Buffer.from(randomBytes(24)).toString("base64url")}`;
}

// ---------------------------------------------------------------- the fake

/** What `failNext` serves instead of the normal answer. */
export type GraphFailure =
  /** A Graph error body; `status` defaults to the one Graph uses for the code (see graphErrorStatus). */
  | { kind: "graph"; code: number; subcode?: number; message?: string; status?: number; details?: string; headers?: Record<string, string> }
  /** A raw HTTP answer (e.g. a 429 or 503 from the edge, with or without Graph's body). */
  | { kind: "http"; status: number; body?: unknown; headers?: Record<string, string> }
  /** The connection is reset before any response byte. */
  | { kind: "drop" };

export interface WebhookTarget {
  url: string;
  appSecret: string;
}

export interface GraphFakeOptions {
  /** Accept only these bearer tokens (others get Graph's 190 / 401). Default: any token. */
  tokens?: string[];
  /** Version path prefix that is part of `url`. Default `/v23.0`. */
  version?: string;
  templatePageSize?: number;
  /** Where async status webhooks go (failNextAsync, autoStatuses); settable later with setWebhookTarget. */
  webhook?: WebhookTarget;
  /** Status webhooks pushed after every successful WhatsApp send (e.g. ["sent","delivered"]). */
  autoStatuses?: ("sent" | "delivered" | "read")[];
}

export class GraphFake {
  readonly requests: RecordedRequest[] = [];
  /** Meta-format templates served by GET /{waba}/message_templates; tests replace or push. */
  templates: Json[] = [];
  /** Webhook deliveries the fake made (async statuses), with the answer it got. */
  readonly webhookDeliveries: { url: string; body: string; status: number }[] = [];

  private readonly server: ReturnType<typeof Bun.serve>;
  private readonly failures = new FailureQueue();
  private readonly dropQueue: ((r: RecordedRequest) => boolean)[] = [];
  private readonly asyncFailures: { code: number; title: string; details?: string }[] = [];
  private webhook?: WebhookTarget;
  private readonly version: string;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(private readonly options: GraphFakeOptions = {}) {
    this.version = options.version ?? "/v23.0";
    this.webhook = options.webhook;
    this.server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => this.handle(req) });
  }

  /** Base URL including the version prefix: use it as `base_url`. */
  get url(): string {
    return `http://127.0.0.1:${this.server.port}${this.version}`;
  }

  setWebhookTarget(target: WebhookTarget | undefined): void {
    this.webhook = target;
  }

  /**
   * Serve `failure` to the next request whose path contains `path` (any request when omitted), `times` times.
   */
  failNext(failure: GraphFailure, { path, times = 1 }: { path?: string | RegExp; times?: number } = {}): void {
    const match = (r: RecordedRequest) => (path === undefined ? true : typeof path === "string" ? r.path.includes(path) : path.test(r.path));
    for (let i = 0; i < times; i++) {
      if (failure.kind === "drop") {
        this.dropQueue.push(match);
      } else if (failure.kind === "graph") {
        const body = graphErrorBody({ code: failure.code, subcode: failure.subcode, message: failure.message, details: failure.details });
        this.failures.push(match, { kind: "response", status: failure.status ?? graphErrorStatus(failure.code), body, headers: failure.headers });
      } else {
        this.failures.push(match, { kind: "response", status: failure.status, body: failure.body ?? "", headers: failure.headers });
      }
    }
  }

  /**
   * The next WhatsApp send is accepted (200 + wamid), then a `failed` status with this error is pushed,
   * signed, to the webhook target — Meta's asynchronous failure path.
   */
  failNextAsync(error: { code: number; title?: string; details?: string }): void {
    this.asyncFailures.push({ code: error.code, title: error.title ?? GRAPH_ERROR_TITLES[error.code] ?? "Error", details: error.details });
  }

  /**
   * POSTs `payload` to `url` the way Meta does: JSON body, `X-Hub-Signature-256` over the exact bytes.
   * `signature`: "valid" (default), "missing", "wrong" (signed with another secret), or a literal header.
   * `mutate` changes the body bytes after signing (to prove the signature covers them).
   */
  async pushWebhook({
    url,
    payload,
    appSecret,
    signature = "valid",
    mutate,
  }: {
    url?: string;
    payload: unknown;
    appSecret?: string;
    signature?: "valid" | "missing" | "wrong" | { header: string };
    mutate?: (body: Uint8Array) => Uint8Array;
  }): Promise<{ status: number; body: string }> {
    const target = url ?? this.webhook?.url;
    const secret = appSecret ?? this.webhook?.appSecret;
    if (!target) throw new Error("pushWebhook: no url and no webhook target");
    if (!secret && signature === "valid") throw new Error("pushWebhook: no appSecret to sign with");
    const text = typeof payload === "string" ? payload : JSON.stringify(payload);
    const bytes = new TextEncoder().encode(text);
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "facebookexternalua" };
    if (signature === "valid") headers["x-hub-signature-256"] = hubSignature({ appSecret: secret!, body: bytes });
    else if (signature === "wrong") headers["x-hub-signature-256"] = hubSignature({ appSecret: `${secret ?? ""}-not-it`, body: bytes });
    else if (typeof signature === "object") headers["x-hub-signature-256"] = signature.header;
    const body = mutate ? mutate(bytes) : bytes;
    const response = await fetch(target, { method: "POST", headers, body });
    const answer = { status: response.status, body: await response.text() };
    this.webhookDeliveries.push({ url: target, body: text, status: answer.status });
    return answer;
  }

  /** Requests whose path contains `part`. */
  requestsTo(part: string): RecordedRequest[] {
    return this.requests.filter((r) => r.path.includes(part));
  }

  get lastRequest(): RecordedRequest | undefined {
    return this.requests[this.requests.length - 1];
  }

  /** Waits for async webhooks the fake is pushing (failNextAsync / autoStatuses). */
  async settle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  reset(): void {
    this.requests.length = 0;
    this.webhookDeliveries.length = 0;
    this.failures.clear();
    this.dropQueue.length = 0;
    this.asyncFailures.length = 0;
    this.templates = [];
  }

  async stop(): Promise<void> {
    await this.settle();
    this.server.stop(true);
  }

  // ------------------------------------------------------------ request handling

  private async handle(req: Request): Promise<Response> {
    const recorded = await recordRequest(req);
    this.requests.push(recorded);

    const dropIndex = this.dropQueue.findIndex((m) => m(recorded));
    if (dropIndex >= 0) {
      this.dropQueue.splice(dropIndex, 1);
      // Erroring the body stream with no reason resets the socket before any byte, quietly.
      return new Response(new ReadableStream({ start: (c) => c.error() }));
    }
    const failure = this.failures.take(recorded);
    if (failure && failure.kind === "response") {
      const body = typeof failure.body === "string" ? failure.body : JSON.stringify(failure.body);
      return new Response(body, {
        status: failure.status,
        headers: { "content-type": typeof failure.body === "string" ? "text/plain" : "application/json; charset=utf-8", ...failure.headers },
      });
    }

    const auth = recorded.headers.authorization ?? "";
    const token = /^Bearer (.+)$/.exec(auth)?.[1] ?? recorded.query.get("access_token") ?? undefined;
    if (!token) return json(graphErrorBody({ code: 190, message: "An active access token must be used to query information about the current user." }), 401);
    if (this.options.tokens && !this.options.tokens.includes(token))
      return json(graphErrorBody({ code: 190, message: "Invalid OAuth access token - Cannot parse access token" }), 401);

    if (!recorded.path.startsWith(`${this.version}/`))
      return json(graphErrorBody({ code: 2500, message: "Unknown path components", type: "OAuthException" }), 400);
    const segments = recorded.path.slice(this.version.length + 1).split("/");
    const [id, edge] = segments;

    if (req.method === "POST" && edge === "messages") return this.postMessages(id, recorded);
    if (req.method === "POST" && edge === "media") return this.postMedia(recorded);
    if (req.method === "POST" && edge === "message_attachments") return json({ attachment_id: randomDigits() });
    if (req.method === "GET" && edge === "message_templates") return this.getTemplates(recorded);
    if (req.method === "POST" && edge === "message_templates") return this.createTemplate(recorded);
    if (req.method === "DELETE" && edge === "message_templates") return this.deleteTemplate(recorded);
    return json(graphErrorBody({ code: 100, message: `Unsupported ${req.method} request. Object with ID '${id}' does not exist` }), 400);
  }

  private postMessages(phoneOrPageId: string, recorded: RecordedRequest): Response {
    const body = (recorded.body ?? {}) as Json;
    if (body.messaging_product === "whatsapp") {
      if (body.status === "read") return json({ success: true });
      if (!body.to || !body.type) return json(graphErrorBody({ code: 100, message: "(#100) The parameter to is required." }), 400);
      const interactiveProblem = body.type === "interactive" ? whatsappInteractiveProblem(body.interactive as Json | undefined) : null;
      if (interactiveProblem) return json(graphErrorBody({ code: 131009, message: `(#131009) Parameter value is not valid: ${interactiveProblem}` }), 400);
      const id = waMessageId();
      const to = String(body.to);
      this.afterWhatsappSend({ phoneNumberId: phoneOrPageId, id, to });
      return json({ messaging_product: "whatsapp", contacts: [{ input: to, wa_id: to.replace(/^\+/, "") }], messages: [{ id }] });
    }
    // Send API: JSON, or multipart whose `recipient`/`message` fields are JSON strings.
    const parse = (v: unknown) => (typeof v === "string" ? safeJson(v) : v) as Json | undefined;
    const recipient = parse(body.recipient);
    const message = parse(body.message);
    if (!recipient?.id || !message) return json(graphErrorBody({ code: 100, message: "(#100) param recipient must be non-empty." }), 400);
    const quick = message.quick_replies as { content_type?: string; title?: string; payload?: string }[] | undefined;
    if (quick && (quick.length > 13 || quick.some((q) => q.content_type === "text" && (!q.title || [...q.title].length > 20 || !q.payload))))
      return json(
        graphErrorBody({ code: 100, message: "(#100) Invalid quick_replies: at most 13, each with a title of at most 20 characters and a payload" }),
        400,
      );
    const attachment = (message.attachment ?? {}) as { payload?: { is_reusable?: boolean } };
    const reusable = attachment.payload?.is_reusable === true || body.filedata !== undefined;
    return json({
      recipient_id: recipient.id,
      message_id: `m_${randomBytes(30).toString("base64url")}`,
      ...(reusable && message.attachment ? { attachment_id: randomDigits() } : {}),
    });
  }

  private postMedia(recorded: RecordedRequest): Response {
    const body = (recorded.body ?? {}) as Json;
    if (body.messaging_product !== "whatsapp" || !body.file || !body.type) {
      return json(graphErrorBody({ code: 100, message: "(#100) The parameter messaging_product is required." }), 400);
    }
    return json({ id: randomDigits() });
  }

  private getTemplates(recorded: RecordedRequest): Response {
    const size =
      Number(recorded.query.get("limit")) > 0
        ? Math.min(Number(recorded.query.get("limit")), this.options.templatePageSize ?? 25)
        : (this.options.templatePageSize ?? 25);
    const after = recorded.query.get("after");
    const start = after ? Number(Buffer.from(after, "base64url").toString()) : 0;
    const data = this.templates.slice(start, start + size);
    const cursor = (n: number) => Buffer.from(String(n)).toString("base64url");
    const hasMore = start + size < this.templates.length;
    const nextUrl = new URL(`http://127.0.0.1:${this.server.port}${recorded.path}`);
    for (const [k, v] of recorded.query) nextUrl.searchParams.set(k, v);
    nextUrl.searchParams.set("after", cursor(start + size));
    return json({
      data,
      paging: {
        cursors: { before: cursor(start), after: cursor(start + size) },
        ...(hasMore ? { next: nextUrl.toString() } : {}),
      },
    });
  }

  /** Meta's create: every `{{n}}` of BODY needs `example.body_text`, a dynamic URL button its `example`. */
  private createTemplate(recorded: RecordedRequest): Response {
    const body = (recorded.body ?? {}) as Json;
    const components = (body.components ?? []) as Json[];
    if (!body.name || !body.language || !body.category || !components.some((c) => c.type === "BODY"))
      return json(graphErrorBody({ code: 100, message: "(#100) Invalid parameter: name, language, category and a BODY component are required" }), 400);
    const missingExample = (c: Json) => {
      if (c.type === "BODY" && /\{\{\d+\}\}/.test(String(c.text)) && !(c.example as Json | undefined)?.body_text) return true;
      return ((c.buttons ?? []) as Json[]).some((b) => b.type === "URL" && /\{\{\d+\}\}/.test(String(b.url)) && !b.example);
    };
    if (components.some(missingExample))
      return json(
        graphErrorBody({ code: 100, message: "(#100) Invalid parameter: Message template 'Variables' component is missing example", subcode: 2388043 }),
        400,
      );
    if (this.templates.some((t) => t.name === body.name && t.language === body.language))
      return json(graphErrorBody({ code: 100, message: "(#100) Invalid parameter: Content in this language already exists", subcode: 2388024 }), 400);
    const id = randomDigits();
    this.templates.push({ id, name: body.name, language: body.language, status: "PENDING", category: body.category, components });
    return json({ id, status: "PENDING", category: body.category });
  }

  /** Meta's delete: by name (every language), or by `hsm_id` and name (that one). */
  private deleteTemplate(recorded: RecordedRequest): Response {
    const name = recorded.query.get("name");
    const hsmId = recorded.query.get("hsm_id");
    if (!name) return json(graphErrorBody({ code: 100, message: "(#100) The parameter name is required" }), 400);
    const gone = this.templates.filter((t) => t.name === name && (!hsmId || String(t.id) === hsmId));
    if (!gone.length) return json(graphErrorBody({ code: 100, message: `(#100) Invalid parameter: template ${name} does not exist` }), 400);
    this.templates = this.templates.filter((t) => !gone.includes(t));
    return json({ success: true });
  }

  private afterWhatsappSend({ phoneNumberId, id, to }: { phoneNumberId: string; id: string; to: string }): void {
    const asyncFailure = this.asyncFailures.shift();
    const statuses: { status: "sent" | "delivered" | "read" | "failed"; errors?: { code: number; title: string; details?: string }[] }[] = asyncFailure
      ? [{ status: "failed", errors: [asyncFailure] }]
      : (this.options.autoStatuses ?? []).map((status) => ({ status }));
    if (!statuses.length) return;
    if (!this.webhook) {
      if (asyncFailure) throw new Error("failNextAsync needs a webhook target (options.webhook or setWebhookTarget)");
      return;
    }
    const recipientId = to.replace(/^\+/, "");
    const run = (async () => {
      // After the HTTP answer, as Meta does: the status never overtakes the send's 200.
      await Bun.sleep(5);
      for (const s of statuses) {
        await this.pushWebhook({ payload: whatsappPayloads.status({ phoneNumberId, id, status: s.status, recipientId, errors: s.errors }) }).catch(
          () => undefined,
        );
      }
    })();
    this.pending.add(run);
    void run.finally(() => this.pending.delete(run));
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function randomDigits(): string {
  return String(100_000_000_000_000 + Math.floor(Math.random() * 900_000_000_000_000));
}

export function startGraphFake(options: GraphFakeOptions = {}): GraphFake {
  return new GraphFake(options);
}

/** What Cloud API refuses in an `interactive` object (its documented limits), or null. */
function whatsappInteractiveProblem(i: Json | undefined): string | null {
  if (!i || typeof (i.body as Json | undefined)?.text !== "string") return "interactive.body.text is required";
  const action = (i.action ?? {}) as {
    buttons?: { type?: string; reply?: { id?: string; title?: string } }[];
    button?: string;
    sections?: { rows?: Json[] }[];
  };
  if (i.type === "button") {
    const buttons = action.buttons ?? [];
    if (buttons.length < 1 || buttons.length > 3) return "buttons: 1 to 3";
    if (buttons.some((b) => b.type !== "reply" || !b.reply?.id || !b.reply.title || [...b.reply.title].length > 20))
      return "button reply: id and title (at most 20)";
    return null;
  }
  if (i.type === "list") {
    const rows = (action.sections ?? []).flatMap((s) => s.rows ?? []);
    if (!action.button || [...action.button].length > 20) return "action.button: 1 to 20 characters";
    if (rows.length < 1 || rows.length > 10) return "rows: 1 to 10 in all";
    return null;
  }
  return `unknown interactive type ${String(i.type)}`;
}
