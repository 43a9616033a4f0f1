/**
 * Telegram `Update` objects → InboundEvents. Shared by webhook mode and getUpdates polling, which
 * deliver the very same JSON.
 *
 * Ids: Telegram's `message_id` is unique only within one chat, so our providerMessageId is
 * `<chat_id>:<message_id>` (the same form `send` returns), which keeps the engine's duplicate check
 * per account sound.
 */
import type { AdapterContext, InboundContent, InboundEvent, InboundSender } from "../channel.types";
import { eventsOfEach } from "../inbound-entries";

interface TgUser {
  id: number;
  is_bot?: boolean;
  first_name?: string;
  last_name?: string;
  username?: string;
}
interface TgChat {
  id: number;
  type: string;
}
interface TgPhotoSize {
  file_id: string;
  file_unique_id?: string;
  width: number;
  height: number;
  file_size?: number;
}
interface TgFile {
  file_id: string;
  file_name?: string;
  mime_type?: string;
  file_size?: number;
}
export interface TgMessage {
  message_id: number;
  from?: TgUser;
  chat: TgChat;
  date: number;
  text?: string;
  caption?: string;
  photo?: TgPhotoSize[];
  document?: TgFile;
  video?: TgFile;
  audio?: TgFile;
  voice?: TgFile;
  sticker?: TgFile & { emoji?: string; is_animated?: boolean };
  location?: { latitude: number; longitude: number };
  venue?: { location: { latitude: number; longitude: number }; title: string; address: string };
  contact?: { phone_number: string; first_name: string; last_name?: string; user_id?: number; vcard?: string };
  reply_to_message?: { message_id: number };
  reply_markup?: { inline_keyboard?: { text?: string; callback_data?: string }[][] };
}
/** A tap on an inline keyboard button (core.telegram.org/bots/api#callbackquery). */
export interface TgCallbackQuery {
  id: string;
  from: TgUser;
  message?: TgMessage;
  data?: string;
}
export interface TgUpdate {
  update_id: number;
  message?: TgMessage;
  callback_query?: TgCallbackQuery;
  my_chat_member?: { chat: TgChat; from: TgUser; date: number; new_chat_member: { status: string; user: TgUser } };
  [other: string]: unknown;
}

/** Update types we ask Telegram for (setWebhook / getUpdates `allowed_updates`). */
export const TELEGRAM_ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member"] as const;

export function telegramMessageId(chatId: number | string, messageId: number | string): string {
  return `${chatId}:${messageId}`;
}

export function senderOf(user: TgUser): InboundSender {
  if (!Number.isSafeInteger(user.id)) throw new Error("from.id is not a Telegram user id");
  const displayName = [user.first_name, user.last_name].filter(Boolean).join(" ") || undefined;
  return { value: String(user.id), username: user.username, displayName };
}

/**
 * parseTelegramUpdate for an update as it came off the wire: a malformed one (a field of the wrong type) is
 * logged and yields no events, so it is acknowledged rather than redelivered forever (DESIGN §23).
 */
export function eventsOfUpdate(update: unknown, log: AdapterContext["log"], now = new Date()): InboundEvent[] {
  return eventsOfEach<TgUpdate>([update], { log, what: "telegram update" }, (u) => parseTelegramUpdate(u, now).events);
}

/** The callback query of an update, which must be answered (answerCallbackQuery) or the client keeps a spinner. */
export function callbackQueryIdOf(update: unknown): string | undefined {
  const id = (update as TgUpdate | null)?.callback_query?.id;
  return typeof id === "string" && id ? id : undefined;
}

/** `now`: a callback query carries no date; the tap is dated when it reaches us. */
export function parseTelegramUpdate(update: TgUpdate, now = new Date()): { events: InboundEvent[] } {
  if (update.message) return { events: parseMessage(update.message) };
  if (update.callback_query) return { events: parseCallbackQuery(update.callback_query, now) };
  const member = update.my_chat_member;
  // Only private chats: a "kicked" there is the user blocking the bot; in groups it means something else.
  if (member && member.chat.type === "private") {
    const status = member.new_chat_member.status;
    if (status === "kicked" || status === "member") {
      return { events: [{ kind: "blocked", from: senderOf(member.from), timestamp: new Date(member.date * 1000), blocked: status === "kicked" }] };
    }
  }
  // edited_message, group traffic…: not part of one-to-one messaging (yet).
  return { events: [] };
}

function parseMessage(message: TgMessage): InboundEvent[] {
  // NB! Group and channel messages are ignored: Switchboard is one-to-one messaging, and a group's
  // chat id is not a contact identity.
  if (message.chat.type !== "private" || !message.from || message.from.is_bot) return [];
  const event: Extract<InboundEvent, { kind: "message" }> = {
    kind: "message",
    providerMessageId: telegramMessageId(message.chat.id, message.message_id),
    from: senderOf(message.from),
    timestamp: new Date(message.date * 1000),
    content: contentOf(message),
  };
  if (message.reply_to_message) event.inReplyTo = telegramMessageId(message.chat.id, message.reply_to_message.message_id);
  // Deep link t.me/<bot>?start=<payload> arrives as "/start <payload>" (payload: up to 64 of A-Z a-z 0-9 _ -).
  const start = message.text?.match(/^\/start(?:@\w+)?\s+(\S+)\s*$/);
  if (start) event.referral = { type: "deep_link", payload: start[1] };
  return [event];
}

/**
 * A tap on our inline keyboard (DESIGN §16): replyId = callback_data, replyTitle = the button's text as the
 * message we sent shows it, inReplyTo = that message. Its id is the query's own (one tap, one message).
 */
function parseCallbackQuery(q: TgCallbackQuery, now: Date): InboundEvent[] {
  if (typeof q.id !== "string" || typeof q.data !== "string" || !q.data || q.from.is_bot) return [];
  const m = q.message;
  if (m && m.chat.type !== "private") return [];
  const button = m?.reply_markup?.inline_keyboard?.flat().find((b) => b.callback_data === q.data);
  const event: Extract<InboundEvent, { kind: "message" }> = {
    kind: "message",
    providerMessageId: `callback:${q.id}`,
    from: senderOf(q.from),
    timestamp: now,
    content: { type: "interactive", interactive: { replyId: q.data, replyTitle: typeof button?.text === "string" ? button.text : null } },
  };
  if (m) event.inReplyTo = telegramMessageId(m.chat.id, m.message_id);
  return [event];
}

function contentOf(m: TgMessage): InboundContent {
  const caption = m.caption;
  if (m.text !== undefined) return { type: "text", text: m.text };
  if (m.photo && m.photo.length > 0) {
    // Telegram lists several sizes of the same picture; keep the largest.
    const largest = m.photo.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
    return { type: "media", media: { kind: "image", providerMediaId: largest.file_id, mimeType: "image/jpeg", caption } };
  }
  if (m.document)
    return {
      type: "media",
      media: { kind: "document", providerMediaId: m.document.file_id, mimeType: m.document.mime_type, filename: m.document.file_name, caption },
    };
  if (m.video)
    return { type: "media", media: { kind: "video", providerMediaId: m.video.file_id, mimeType: m.video.mime_type, filename: m.video.file_name, caption } };
  if (m.audio)
    return { type: "media", media: { kind: "audio", providerMediaId: m.audio.file_id, mimeType: m.audio.mime_type, filename: m.audio.file_name, caption } };
  if (m.voice) return { type: "media", media: { kind: "audio", providerMediaId: m.voice.file_id, mimeType: m.voice.mime_type ?? "audio/ogg", caption } };
  if (m.sticker) {
    const mimeType = m.sticker.is_animated ? "application/x-tgsticker" : "image/webp";
    return { type: "media", media: { kind: "sticker", providerMediaId: m.sticker.file_id, mimeType, caption: m.sticker.emoji } };
  }
  if (m.venue) {
    return {
      type: "location",
      location: { latitude: m.venue.location.latitude, longitude: m.venue.location.longitude, name: m.venue.title, address: m.venue.address },
    };
  }
  if (m.location) return { type: "location", location: { latitude: m.location.latitude, longitude: m.location.longitude } };
  if (m.contact) {
    const c = m.contact;
    return {
      type: "contacts",
      contacts: [{ phone: c.phone_number, firstName: c.first_name, lastName: c.last_name, telegramUserId: c.user_id, vcard: c.vcard }],
    };
  }
  return { type: "unsupported", raw: m };
}
