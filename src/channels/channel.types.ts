/**
 * The one interface every channel provider implements (sandbox, WhatsApp Cloud, Messenger, Instagram,
 * X, TikTok, Telegram, SMTP). Transport only: which messages may be sent, windows, prices, retries and
 * batching are decided by the messaging engine and the rules table (channel.rules.ts), never here.
 *
 * Contract for implementers:
 * - `send` never throws for a provider answer: every provider outcome becomes a SendResult. It may throw
 *   only for programming errors; the engine treats a throw as a retryable PROVIDER_UNAVAILABLE.
 * - `handleWebhook` verifies the provider's signature/handshake itself. An unverified request returns a
 *   401/403 response and NO events (nothing may be stored from a forged request).
 * - All HTTP goes through `ctx.fetch` to `settings.base_url`, so tests point adapters at fakes. `ctx.fetch`
 *   aborts a call after `ctx.requestTimeoutMs` unless the call brings its own `signal`; other transports
 *   (SMTP) apply `requestTimeoutMs` themselves.
 * - NB! A URL a caller supplied (media, header media) is fetched ONLY through `ctx.fetchUrl` (the guarded
 *   fetcher: address policy, redirects re-checked, size cap), never `ctx.fetch` nor a library's own fetch.
 */
import type { TSchema } from "@sinclair/typebox";
import type { FetchUrl } from "../platform/outbound/outbound.fetch";

export const CHANNELS = ["whatsapp", "instagram", "messenger", "x", "tiktok", "telegram", "email"] as const;
export type Channel = (typeof CHANNELS)[number];

export const PROVIDERS = ["sandbox", "whatsapp-cloud", "messenger", "instagram", "x", "tiktok", "telegram", "smtp"] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/**
 * Why a message failed, as shown in `message.failed` events and GET /messages/{id} (`error.reason`).
 * Adapters map provider error codes onto these.
 */
export const FAILURE_REASONS = [
  "USER_BLOCKED", // the contact blocked us (Telegram 403 blocked, Messenger 551, ...)
  "PROVIDER_REJECTED", // the provider refused this message permanently (bad parameter, policy)
  "MESSAGING_WINDOW_CLOSED", // the provider says the customer-service window is closed (WA 131047)
  "RECIPIENT_INVALID", // no such user / chat / mailbox
  "CONTACT_BLOCKED", // refused by us when a scheduled message fell due: the contact was blocked or opted out meanwhile (DESIGN §18)
  "TEMPLATE_INVALID", // template missing, paused, disabled or parameters wrong
  "MEDIA_INVALID", // media unreachable, too large or of a refused type
  "URL_NOT_ALLOWED", // a media URL (or a redirect from it) leads where we never fetch from: [outbound], DESIGN §23
  "RATE_LIMITED", // provider throttling that outlived our retries
  "AUTH_FAILED", // our credentials for this account are invalid or expired
  "PROVIDER_UNAVAILABLE", // outage / 5xx / network error that outlived our retries
] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** Status of a channel account, shown by GET /channels. */
export type AccountStatus = "active" | "auth_failed" | "error";

/** A configured channel account (one `[[channels]]` entry), settings already resolved (env:/file: applied). */
export interface ChannelAccount {
  id: string;
  /** Company slug from the config. */
  company: string;
  channel: Channel;
  provider: ProviderName;
  name: string;
  isDefault: boolean;
  settings: Record<string, unknown>;
  /** Sends per second to the provider (`max_per_second`); null: unlimited. */
  maxPerSecond: number | null;
  /** Who contacts write to in click-to-chat links (`chat_handle`): number, username or page; null: unknown. */
  chatHandle: string | null;
}

// ---------------------------------------------------------------- outbound

/** A file we hold (uploaded through POST /media), readable from disk. */
export interface StoredMedia {
  /** Our media id. */
  id: string;
  path: string;
  mimeType: string;
  filename: string;
  size: number;
  /** Provider-side media id cached from an earlier upload to this account, if any. */
  providerMediaId?: string;
}

/** WhatsApp-style template component, the shape our templates table keeps for every channel. */
export interface TemplateComponent {
  type: "header" | "body" | "footer" | "buttons";
  format?: "text" | "image" | "video" | "document";
  text?: string;
  buttons?: { type: "quick_reply" | "url" | "phone_number" | "copy_code"; text: string; url?: string; phoneNumber?: string }[];
}

export type OutboundContent =
  | { type: "text"; text: string }
  | { type: "media"; media: { url?: string; file?: StoredMedia; caption?: string } }
  | {
      type: "template";
      template: {
        name: string;
        language: string;
        components: TemplateComponent[];
        /** Positional params as given by the caller: `body.1`, `button.0.1`, ... */
        params: Record<string, string>;
        headerMedia?: { url?: string; file?: StoredMedia };
        /**
         * The template rendered with its params, for channels that have no provider-side templates
         * (e-mail, Telegram, X, ...): they send this as ordinary content.
         */
        rendered: { subject?: string; text: string; html?: string };
      };
    }
  | { type: "email"; email: { subject?: string; html?: string; text?: string } }
  | { type: "interactive"; interactive: InteractiveContent };

/** Reply buttons or a list picker (DESIGN §16), limits already checked at acceptance. */
export interface InteractiveContent {
  kind: "buttons" | "list";
  header?: { text: string };
  body: { text: string };
  footer?: { text: string };
  buttons?: { id: string; title: string }[];
  list?: { button: string; sections: { title?: string; rows: { id: string; title: string; description?: string }[] }[] };
}

export interface OutboundMessage {
  /** Our message id; stable across retries, usable as a provider-side idempotency key. */
  messageId: string;
  to: {
    /** The identity value: E.164 phone, PSID, IG-scoped id, user id, chat id, e-mail address. */
    value: string;
    /** Provider-side conversation reference learnt from inbound (TikTok conversation_id). */
    conversationRef?: string;
    displayName?: string;
  };
  content: OutboundContent;
  /** Reply context: the provider id of the message we answer (WhatsApp context, e-mail In-Reply-To). */
  replyTo?: { providerMessageId: string; references?: string[] };
  /**
   * E-mail from a template or a campaign: the recipient's one-click unsubscribe URL (DESIGN §20), sent as
   * `List-Unsubscribe` with `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058).
   */
  unsubscribeUrl?: string;
}

export type SendResult =
  | {
      ok: true;
      providerMessageId: string;
      /** Provider media id created by this send's upload, to be cached on the media row. */
      providerMediaId?: string;
      /**
       * Reports the provider will make about this send later (the sandbox's delivered/read): stored in the
       * same commit as the send's `sent`, and applied at each `at` — also after a restart or a crash.
       */
      reports?: { at: Date; events: ReportEvent[] }[];
    }
  | {
      ok: false;
      /** true: transient (throttling, 5xx, network); the engine retries with backoff. */
      retry: boolean;
      /** Provider-requested delay (Retry-After, retry_after, x-rate-limit-reset). */
      retryAfterMs?: number;
      reason: FailureReason;
      /** Provider's own code and text, kept for operators (e.g. "131047", "Forbidden: bot was blocked by the user"). */
      providerCode?: string;
      message: string;
      /** Set when the failure says something about the account itself (190 token expired → auth_failed). */
      accountStatus?: AccountStatus;
    };

// ---------------------------------------------------------------- inbound

export type InboundContent =
  | { type: "text"; text: string }
  | {
      type: "media";
      media: {
        kind: "image" | "video" | "audio" | "document" | "sticker";
        providerMediaId?: string;
        url?: string;
        mimeType?: string;
        caption?: string;
        filename?: string;
      };
    }
  | { type: "location"; location: { latitude: number; longitude: number; name?: string; address?: string } }
  | { type: "contacts"; contacts: unknown[] }
  | { type: "email"; email: { subject?: string; text?: string; html?: string } }
  /**
   * A tap on one of our buttons / list rows / quick replies / inline keyboard buttons. The provider id of the
   * message tapped goes in the event's `inReplyTo`; the engine stores our id as `interactive.inReplyTo`.
   */
  | { type: "interactive"; interactive: { replyId: string; replyTitle: string | null } }
  | { type: "unsupported"; raw: unknown };

export interface InboundSender {
  /** Identity value on this channel (same normal form as outbound `to.value`). */
  value: string;
  /** @username when the provider tells it, so a pending `@username` identity can be resolved. */
  username?: string;
  displayName?: string;
}

export type InboundEvent =
  | {
      kind: "message";
      providerMessageId: string;
      from: InboundSender;
      /** The provider's timestamp of the message: the messaging window opens here. */
      timestamp: Date;
      content: InboundContent;
      /** Provider conversation reference to address replies with (TikTok conversation_id). */
      conversationRef?: string;
      /** Provider id of the message this one answers (WhatsApp context.id, e-mail In-Reply-To). */
      inReplyTo?: string;
      /** First-contact source data: ad referral, deep-link payload (`/start xyz`), ... */
      referral?: Record<string, unknown>;
    }
  | {
      kind: "status";
      providerMessageId: string;
      status: "sent" | "delivered" | "read" | "failed";
      timestamp: Date;
      error?: { reason: FailureReason; providerCode?: string; message: string };
    }
  /** Messenger-style receipts: every outbound message to `from` up to `watermark` is delivered/read. */
  | { kind: "watermark"; from: InboundSender; status: "delivered" | "read"; watermark: Date }
  /** The contact blocked (or unblocked) us: Telegram my_chat_member kicked/member. */
  | { kind: "blocked"; from: InboundSender; timestamp: Date; blocked: boolean }
  /**
   * The provider reviewed or re-rated one of our templates (WhatsApp `message_template_status_update` /
   * `message_template_quality_update`): a status (with its reason when rejected) or a quality, or both.
   */
  | {
      kind: "template";
      providerTemplateId: string | null;
      name: string;
      language: string;
      status?: ProviderTemplate["status"];
      rejectedReason?: string | null;
      quality?: string;
      timestamp: Date;
    };

/** A provider's report on messages we sent (messages.reports.ts): one message's status, or a read/delivered watermark. */
export type ReportEvent = Extract<InboundEvent, { kind: "status" | "watermark" }>;

/** The raw HTTP request that reached /hooks/{channelAccountId}. The body is the exact bytes (signatures!). */
export interface WebhookRequest {
  method: string;
  url: URL;
  headers: Headers;
  rawBody: Uint8Array;
}

export interface WebhookResult {
  /** What to answer the provider (handshake challenge, 200 ack, 401 on a bad signature). */
  response: { status: number; body?: string; headers?: Record<string, string> };
  events: InboundEvent[];
}

// ---------------------------------------------------------------- adapter

export interface ChannelCapabilities {
  /**
   * How /hooks/{id} is authenticated: by the provider's signature, or (sandbox only) by an API key of
   * the account's company, checked by the route before handleWebhook is called.
   */
  webhookAuth: "provider-signature" | "api-key";
  deliveryReceipts: boolean;
  readReceipts: boolean;
  /**
   * Stored media (POST /media files) this adapter can send: mime type → max bytes. Checked at acceptance
   * and at upload with `channel`; an adapter that sends media by URL only declares none.
   */
  media: Record<string, number>;
}

/** Small persistent key/value store per account (Telegram getUpdates offset, IMAP UID, ...). */
export interface AdapterStateStore {
  read(key: string): Promise<string | undefined>;
  /** Resolves once the value has committed. */
  write(key: string, value: string): Promise<void>;
}

export interface AdapterContext {
  account: ChannelAccount;
  /** Bounded: a call without its own `signal` is aborted after `requestTimeoutMs` (provider-timeout.ts). */
  fetch: typeof fetch;
  /** The guarded fetcher for URLs a caller supplied (platform/outbound): the only way to fetch those. */
  fetchUrl: FetchUrl;
  /** How long one provider call may wait for its answer (a quarter of the job lease; see provider-timeout.ts). */
  requestTimeoutMs: number;
  now: () => Date;
  log: { debug(o: object, m?: string): void; info(o: object, m?: string): void; warn(o: object, m?: string): void; error(o: object, m?: string): void };
  /** `[server] public_url`, e.g. to register a Telegram webhook. */
  publicUrl: string;
  dataDir: string;
  state: AdapterStateStore;
  /** Where background receivers (polling, IMAP, inbound SMTP) hand over what they received. */
  onInbound: (events: InboundEvent[]) => Promise<void>;
}

/** A synced provider template (WhatsApp message_templates). */
export interface ProviderTemplate {
  providerTemplateId?: string;
  name: string;
  language: string;
  category: string;
  status: "approved" | "pending" | "rejected" | "paused" | "disabled";
  components: TemplateComponent[];
  /** Why it was rejected (Meta's `rejected_reason`), when it was. */
  rejectedReason?: string | null;
  /** The provider's quality rating (Meta: GREEN | YELLOW | RED | UNKNOWN). */
  quality?: string | null;
}

/** A template to submit for the provider's review (DESIGN §17): our components plus an example per param. */
export interface TemplateSubmission {
  name: string;
  language: string;
  category: "marketing" | "utility" | "authentication";
  components: TemplateComponent[];
  /** `body.1` → "A-1", `button.0.1` → "summer": one per param of the components (the provider requires them). */
  examples: Record<string, string>;
}

export interface ChannelAdapter {
  readonly capabilities: ChannelCapabilities;
  send(message: OutboundMessage): Promise<SendResult>;
  handleWebhook(request: WebhookRequest): Promise<WebhookResult>;
  /** Start this instance's receivers (inbound SMTP listener, setWebhook). Optional. */
  start?(): Promise<void>;
  /**
   * Start the receivers only one instance may run at a time (Telegram long polling, IMAP): on the leader
   * (platform/leader.ts; on SQLite the one instance). Optional.
   */
  startPolling?(): Promise<void>;
  /** Stop those (leadership moved elsewhere); must resolve within a few seconds. */
  stopPolling?(): Promise<void>;
  /** Stop every receiver; must resolve within a few seconds. */
  stop?(): Promise<void>;
  /** Provider templates (WhatsApp). Optional. */
  syncTemplates?(): Promise<ProviderTemplate[]>;
  /**
   * Submits a template for review (WhatsApp `POST /{waba_id}/message_templates`): the provider's id and the
   * status it answered (usually pending). Throws on a provider refusal (GraphRequestError carries the failure).
   */
  submitTemplate?(template: TemplateSubmission): Promise<{ providerTemplateId: string; status: ProviderTemplate["status"] }>;
  /** Deletes a template at the provider (every language of the name when no id is given). Throws on a refusal. */
  deleteTemplate?(template: { name: string; providerTemplateId: string | null }): Promise<void>;
}

/** One row of the provider registry (channel.registry.ts). */
export interface ProviderDefinition<S extends TSchema = TSchema> {
  name: ProviderName;
  /** Channels this provider can serve. */
  channels: readonly Channel[];
  /** TypeBox schema of `[channels.settings]` with defaults and descriptions; checked at start-up. */
  settings: S;
  create(ctx: AdapterContext): ChannelAdapter;
}
