/**
 * Telegram Bot API adapter: sendMessage / sendPhoto / sendDocument / sendVideo / sendAudio / sendVoice,
 * inbound by webhook (secret header) or getUpdates polling. Telegram has no delivery or read receipts.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type {
  AdapterContext,
  ChannelAdapter,
  ChannelCapabilities,
  InteractiveContent,
  OutboundMessage,
  ProviderDefinition,
  SendResult,
  StoredMedia,
  WebhookRequest,
  WebhookResult,
} from "../channel.types";
import { callTelegram, type TelegramCallResult } from "./telegram.api";
import { telegramFailure } from "./telegram.errors";
import { eventsOfUpdate, telegramMessageId, TELEGRAM_ALLOWED_UPDATES, type TgUpdate } from "./telegram.inbound";
import { answerCallbackQuery, startTelegramPolling, type TelegramPoller } from "./telegram.polling";
import { readTelegramSettings, telegramSettings, type TelegramSettings } from "./telegram.settings";

const MB = 1024 * 1024;

/** Bot API upload limits: photos 10 MB, other files 50 MB (by URL Telegram fetches at most 5/20 MB). */
export const telegramCapabilities: ChannelCapabilities = {
  webhookAuth: "provider-signature",
  deliveryReceipts: false,
  readReceipts: false,
  media: {
    "image/jpeg": 10 * MB,
    "image/png": 10 * MB,
    "image/webp": 10 * MB,
    "image/gif": 50 * MB,
    "video/mp4": 50 * MB,
    "audio/mpeg": 50 * MB,
    "audio/mp4": 50 * MB,
    "audio/ogg": 50 * MB,
    "application/pdf": 50 * MB,
    "application/zip": 50 * MB,
    "text/plain": 50 * MB,
  },
};

/** Bot API method and its file field for one kind of media. */
type MediaMethod = {
  method: "sendPhoto" | "sendDocument" | "sendVideo" | "sendAudio" | "sendVoice";
  field: "photo" | "document" | "video" | "audio" | "voice";
};

interface TgSentMessage {
  message_id: number;
  chat: { id: number };
  photo?: { file_id: string; width: number; height: number }[];
  document?: { file_id: string };
  video?: { file_id: string };
  audio?: { file_id: string };
  voice?: { file_id: string };
  animation?: { file_id: string };
}

export function createTelegramAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings = readTelegramSettings(ctx.account.settings);
  if (settings.mode === "webhook" && !settings.secret_token) {
    // A bad config stops start-up (DESIGN §2) rather than leaving an endpoint that accepts forgeries or refuses everything.
    throw new Error(`channel ${ctx.account.id} (telegram): settings.secret_token is required when settings.mode = "webhook"`);
  }
  let poller: TelegramPoller | undefined;

  const call = <T>(method: string, body: Record<string, unknown> | FormData) =>
    callTelegram<T>({ fetch: ctx.fetch, baseUrl: settings.base_url, token: settings.bot_token, method, body });

  async function send(message: OutboundMessage): Promise<SendResult> {
    const common: Record<string, unknown> = { chat_id: chatIdOf(message.to.value) };
    if (message.replyTo) {
      // Our providerMessageId is "<chat_id>:<message_id>"; Telegram wants the bare message_id.
      const messageId = Number(message.replyTo.providerMessageId.split(":").pop());
      if (Number.isSafeInteger(messageId)) common.reply_parameters = { message_id: messageId, allow_sending_without_reply: true };
    }
    const content = message.content;
    switch (content.type) {
      case "text":
        return finish(await call<TgSentMessage>("sendMessage", { ...common, text: content.text }));
      case "media":
        return sendMedia({ common, media: content.media, caption: content.media.caption });
      case "template": {
        // Telegram has no provider-side templates: the rendered text goes out as a message (with the header
        // media, when the template has one, as a captioned photo/document).
        const { rendered, headerMedia } = content.template;
        if (headerMedia && (headerMedia.url || headerMedia.file)) return sendMedia({ common, media: headerMedia, caption: rendered.text });
        return finish(await call<TgSentMessage>("sendMessage", { ...common, text: rendered.text }));
      }
      case "email":
        return { ok: false, retry: false, reason: "PROVIDER_REJECTED", message: "content type email cannot be sent on Telegram" };
      case "interactive":
        return finish(await call<TgSentMessage>("sendMessage", { ...common, ...telegramInteractive(content.interactive) }));
    }
  }

  async function sendMedia(opts: { common: Record<string, unknown>; media: { url?: string; file?: StoredMedia }; caption?: string }): Promise<SendResult> {
    const { common, media, caption } = opts;
    const { method, field } = mediaMethodFor(media.file?.mimeType ?? guessMimeFromUrl(media.url));
    const withCaption = caption ? { ...common, caption } : common;
    const file = media.file;
    if (file?.providerMediaId) {
      const answer = await call<TgSentMessage>(method, { ...withCaption, [field]: file.providerMediaId });
      // NB! A cached file_id can go stale (other bot token, Telegram-side expiry): upload the file again once.
      const stale = answer.kind === "error" && answer.error.error_code === 400 && /file/i.test(answer.error.description);
      if (!stale) return finish(answer);
      ctx.log.warn({ accountId: ctx.account.id, mediaId: file.id }, "telegram: cached file_id refused, uploading again");
    }
    if (file) {
      const form = new FormData();
      for (const [key, value] of Object.entries(withCaption)) form.append(key, typeof value === "object" ? JSON.stringify(value) : String(value));
      const bytes = Bun.file(file.path);
      if (!(await bytes.exists())) return { ok: false, retry: false, reason: "MEDIA_INVALID", message: `stored media ${file.id} is missing on disk` };
      form.append(field, new File([await bytes.arrayBuffer()], file.filename, { type: file.mimeType }));
      const answer = await call<TgSentMessage>(method, form);
      return finish(answer, { field, wantMediaId: true });
    }
    if (media.url) return finish(await call<TgSentMessage>(method, { ...withCaption, [field]: media.url }));
    return { ok: false, retry: false, reason: "MEDIA_INVALID", message: "media has neither url nor file" };
  }

  function finish(answer: TelegramCallResult<TgSentMessage>, opts?: { field: MediaMethod["field"]; wantMediaId: boolean }): SendResult {
    if (answer.kind !== "ok") return telegramFailure(answer);
    const sent = answer.result;
    const result: SendResult = { ok: true, providerMessageId: telegramMessageId(sent.chat.id, sent.message_id) };
    if (opts?.wantMediaId) {
      const fileId = sentFileId(sent, opts.field);
      if (fileId) result.providerMediaId = fileId;
    }
    return result;
  }

  async function handleWebhook(request: WebhookRequest): Promise<WebhookResult> {
    if (settings.mode !== "webhook") return { response: { status: 404, body: "webhook mode is off for this account" }, events: [] };
    if (request.method !== "POST") return { response: { status: 405 }, events: [] };
    if (!secretMatches(request.headers.get("x-telegram-bot-api-secret-token"), settings.secret_token)) {
      return { response: { status: 401, body: "bad secret token" }, events: [] };
    }
    let update: TgUpdate;
    try {
      update = JSON.parse(new TextDecoder().decode(request.rawBody)) as TgUpdate;
    } catch {
      return { response: { status: 400, body: "body is not JSON" }, events: [] };
    }
    if (typeof update?.update_id !== "number") return { response: { status: 400, body: "not a Telegram update" }, events: [] };
    const events = eventsOfUpdate(update, ctx.log, ctx.now());
    // A tapped inline button spins on the contact's screen until answered (DESIGN §16).
    await answerCallbackQuery(ctx, call, update);
    return { response: { status: 200 }, events };
  }

  async function startPolling(): Promise<void> {
    if (settings.mode === "polling") poller ??= startTelegramPolling({ ctx, baseUrl: settings.base_url, token: settings.bot_token });
  }

  async function stopPolling(): Promise<void> {
    const running = poller;
    poller = undefined;
    await running?.stop();
  }

  async function start(): Promise<void> {
    if (settings.mode === "polling") return;
    const url = `${ctx.publicUrl.replace(/\/+$/, "")}/hooks/${ctx.account.id}`;
    const answer = await call<boolean>("setWebhook", { url, secret_token: settings.secret_token, allowed_updates: TELEGRAM_ALLOWED_UPDATES });
    if (answer.kind === "ok") ctx.log.info({ accountId: ctx.account.id, url }, "telegram: webhook registered");
    // Not fatal: Telegram keeps an earlier registration, and the appliance must come up without internet.
    else ctx.log.error({ accountId: ctx.account.id, url, answer }, "telegram: setWebhook failed");
  }

  return {
    capabilities: telegramCapabilities,
    send,
    handleWebhook,
    start,
    startPolling,
    stopPolling,
    // Webhook mode keeps its registration: Telegram queues updates (up to 24 h) while we are down.
    stop: stopPolling,
  };
}

export const telegramProvider: ProviderDefinition<typeof telegramSettings> = {
  name: "telegram",
  channels: ["telegram"],
  settings: telegramSettings,
  create: createTelegramAdapter,
};

export type { TelegramSettings };

function chatIdOf(value: string): number | string {
  // Private chat ids are the user ids (< 2^52 by Telegram's guarantee); "@channel" names pass through.
  return /^-?\d+$/.test(value) ? Number(value) : value;
}

/**
 * The `X-Telegram-Bot-Api-Secret-Token` check: constant time (SHA-256 digests compared, so the time tells
 * nothing of the secret's length either); an empty configured secret never verifies.
 */
function secretMatches(given: string | null, expected: string): boolean {
  if (!given || !expected) return false;
  const digest = (v: string) => createHash("sha256").update(v).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

export function mediaMethodFor(mimeType: string | undefined): MediaMethod {
  const mime = (mimeType ?? "").toLowerCase();
  if (mime === "image/jpeg" || mime === "image/png" || mime === "image/webp") return { method: "sendPhoto", field: "photo" };
  if (mime === "video/mp4") return { method: "sendVideo", field: "video" };
  // Telegram plays OGG/Opus as a voice note; MP3 and M4A as music.
  if (mime === "audio/ogg") return { method: "sendVoice", field: "voice" };
  if (mime === "audio/mpeg" || mime === "audio/mp4" || mime === "audio/m4a") return { method: "sendAudio", field: "audio" };
  return { method: "sendDocument", field: "document" };
}

function guessMimeFromUrl(url: string | undefined): string | undefined {
  const ext = url ? new URL(url, "http://x").pathname.split(".").pop()?.toLowerCase() : undefined;
  const byExt: Record<string, string> = {
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    png: "image/png",
    webp: "image/webp",
    mp4: "video/mp4",
    mp3: "audio/mpeg",
    m4a: "audio/mp4",
    ogg: "audio/ogg",
    oga: "audio/ogg",
  };
  return ext ? byExt[ext] : undefined;
}

function sentFileId(sent: TgSentMessage, field: MediaMethod["field"]): string | undefined {
  if (field === "photo") {
    const sizes = sent.photo ?? [];
    return sizes.length ? sizes.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a)).file_id : undefined;
  }
  // Telegram may turn an uploaded document into an animation (GIF/MP4 without sound).
  return sent[field]?.file_id ?? (field === "document" ? sent.animation?.file_id : undefined);
}

/**
 * DESIGN §16 → Bot API sendMessage with an inline keyboard (core.telegram.org/bots/api#inlinekeyboardmarkup):
 * header, body and footer as the text; the buttons on one row, or each list row a row of its own; `callback_data`
 * = our id (≤ 64 bytes, checked at acceptance). A tap comes back as a `callback_query`.
 */
export function telegramInteractive(i: InteractiveContent): { text: string; reply_markup: { inline_keyboard: { text: string; callback_data: string }[][] } } {
  const text = [i.header?.text, i.body.text, i.footer?.text].filter((t): t is string => Boolean(t)).join("\n\n");
  const key = (c: { id: string; title: string }) => ({ text: c.title, callback_data: c.id });
  const inline_keyboard = i.kind === "buttons" ? [(i.buttons ?? []).map(key)] : (i.list?.sections.flatMap((s) => s.rows) ?? []).map((r) => [key(r)]);
  return { text, reply_markup: { inline_keyboard } };
}
