/**
 * Inbound parser for Messenger-Platform-style webhooks, shared by Messenger (`object:"page"`) and Instagram
 * (`object:"instagram"`): `entry[].messaging[]` items with `sender`, `recipient`, `timestamp` (epoch ms) and
 * one of `message`, `postback`, `referral`, `delivery`, `read`.
 */
import type { AdapterContext, InboundContent, InboundEvent } from "../channel.types";

interface MessagingAttachment {
  type?: string;
  payload?: { url?: string; sticker_id?: number; title?: string; coordinates?: { lat?: number; long?: number } } & Record<string, unknown>;
}

interface MessagingItem {
  sender?: { id?: string };
  recipient?: { id?: string };
  timestamp?: number;
  message?: {
    mid?: string;
    text?: string;
    is_echo?: boolean;
    is_deleted?: boolean;
    is_unsupported?: boolean;
    attachments?: MessagingAttachment[];
    quick_reply?: { payload?: string };
    reply_to?: { mid?: string };
    referral?: Record<string, unknown>;
  };
  postback?: { mid?: string; title?: string; payload?: string; referral?: Record<string, unknown> };
  referral?: Record<string, unknown>;
  delivery?: { mids?: string[]; watermark?: number };
  read?: { watermark?: number; mid?: string };
}

export interface MessagingParseOptions {
  /** `page` for Messenger, `instagram` for Instagram; other objects yield no events. */
  object: "page" | "instagram";
  /** Page id / IG account id of this channel account; entries for other ids are skipped when set. */
  accountId?: string;
  /** Messenger sends `delivery`; Instagram has no delivery receipts. */
  deliveryReceipts: boolean;
  state: AdapterContext["state"];
  log: AdapterContext["log"];
}

/** State key holding a referral that arrived without a message, attached to that sender's next message. */
const pendingReferralKey = (senderId: string) => `pending_referral:${senderId}`;

function attachmentContent(attachment: MessagingAttachment, caption: string | undefined): InboundContent {
  const url = attachment.payload?.url;
  switch (attachment.type) {
    case "image":
      // Messenger delivers stickers (the thumbs-up too) as images carrying sticker_id.
      return { type: "media", media: { kind: attachment.payload?.sticker_id !== undefined ? "sticker" : "image", url, caption } };
    case "video":
    case "audio":
      return { type: "media", media: { kind: attachment.type, url, caption } };
    case "file":
      return { type: "media", media: { kind: "document", url, caption } };
    case "location": {
      const c = attachment.payload?.coordinates;
      if (typeof c?.lat === "number" && typeof c?.long === "number") {
        return { type: "location", location: { latitude: c.lat, longitude: c.long, name: attachment.payload?.title } };
      }
      return { type: "unsupported", raw: attachment };
    }
    default:
      // share, story_mention, ig_reel, reel, fallback, template, ...: kept raw for the operator.
      return { type: "unsupported", raw: attachment };
  }
}

export async function parseMessagingWebhook({ payload, options }: { payload: unknown; options: MessagingParseOptions }): Promise<InboundEvent[]> {
  const { log } = options;
  const body = payload as { object?: unknown; entry?: unknown };
  if (!body || body.object !== options.object || !Array.isArray(body.entry)) {
    log.debug({ object: body?.object }, "meta messaging webhook: not for this provider, ignored");
    return [];
  }
  // Entry by entry, item by item: a malformed one is skipped (logged), the rest kept.
  const what = `meta ${options.object} webhook`;
  return await eachAwaited<{ id?: string; messaging?: unknown }>(body.entry, { log, what }, async (entry) => {
    if (options.accountId && entry.id && entry.id !== options.accountId) {
      // NB! One Meta app posts every Page's events to its one callback URL; another account's events
      // arriving here must not be stored under this account.
      log.warn({ entryId: entry.id, accountId: options.accountId }, "meta messaging webhook entry for another account, skipped");
      return [];
    }
    return await eachAwaited<MessagingItem>(entry.messaging, { log, what }, (item) => parseItem(item, options));
  });
}

/**
 * eventsOfEach (inbound-entries.ts) for a parser that awaits (the pending referral is adapter state): one by
 * one, in order (a referral kept by one item is taken by the next message of its sender); a malformed one is
 * skipped (logged), the rest kept.
 */
async function eachAwaited<T>(items: unknown, { log, what }: { log: AdapterContext["log"]; what: string }, parse: (item: T) => Promise<InboundEvent[]>) {
  if (!Array.isArray(items)) return [];
  const events: InboundEvent[] = [];
  for (const [index, item] of items.entries()) {
    try {
      events.push(...(await parse(item as T)));
    } catch (error) {
      log.warn({ err: error, index }, `${what}: a malformed entry skipped, the rest of the delivery kept`);
    }
  }
  return events;
}

async function parseItem(item: MessagingItem, options: MessagingParseOptions): Promise<InboundEvent[]> {
  const senderId = item.sender?.id;
  if (!senderId) return [];
  if (typeof senderId !== "string") throw new Error("sender.id is not a string");
  const from = { value: senderId };
  const timestamp = new Date(item.timestamp ?? 0);
  if (Number.isNaN(timestamp.getTime())) throw new Error("timestamp is not a time");

  if (item.message) {
    const m = item.message;
    // Echoes are our own outbound messages (and those sent from the Page inbox): not inbound.
    if (m.is_echo || m.is_deleted || !m.mid) return [];
    if (typeof m.mid !== "string") throw new Error("message.mid is not a string");
    const referral = await takeReferral({ senderId, inline: m.referral ?? item.referral, options });
    const base = { kind: "message" as const, from, timestamp, ...(m.reply_to?.mid ? { inReplyTo: m.reply_to.mid } : {}) };
    const attachments = m.attachments ?? [];
    if (attachments.length === 0) {
      const payload = m.quick_reply?.payload;
      // A quick-reply tap (DESIGN §16): the payload is the id we gave, the text the title the contact saw.
      const content: InboundContent =
        typeof payload === "string" && payload
          ? { type: "interactive", interactive: { replyId: payload, replyTitle: typeof m.text === "string" ? m.text : null } }
          : typeof m.text === "string"
            ? { type: "text", text: m.text }
            : { type: "unsupported", raw: m };
      return [{ ...base, providerMessageId: m.mid, content, ...(referral ? { referral } : {}) }];
    }
    // One event per attachment; the first keeps the provider's mid (dedupe key), the rest get a suffix.
    return attachments.map((attachment, index) => ({
      ...base,
      providerMessageId: index === 0 ? m.mid! : `${m.mid}#${index}`,
      content: attachmentContent(attachment, index === 0 ? m.text : undefined),
      ...(index === 0 && referral ? { referral } : {}),
    }));
  }

  if (item.postback) {
    const p = item.postback;
    const referral = await takeReferral({ senderId, inline: p.referral, options });
    // A button tap is the contact writing to us (it opens the window): shown as its title text.
    return [
      {
        kind: "message",
        providerMessageId: p.mid ?? `postback:${senderId}:${item.timestamp ?? 0}`,
        from,
        timestamp,
        content: { type: "text", text: p.title ?? p.payload ?? "" },
        ...(referral ? { referral } : {}),
      },
    ];
  }

  if (item.referral) {
    // A referral without a message (m.me / ig.me link or ad tapped in an existing thread) has no event of
    // its own in our contract: keep it and attach it to this sender's next message.
    await options.state.write(pendingReferralKey(senderId), JSON.stringify(item.referral));
    return [];
  }

  if (item.delivery && options.deliveryReceipts && typeof item.delivery.watermark === "number") {
    const at = new Date(item.delivery.watermark);
    // NB! The watermark is Meta's clock and our sentAt is taken when the Send API answered, so a message
    // delivered within the round trip has sentAt > watermark. Meta's `mids` (when present) name the
    // delivered messages exactly: one status event each, then the watermark for everything older.
    return [...exactStatuses(item.delivery.mids ?? [], "delivered", at), { kind: "watermark", from, status: "delivered", watermark: at }];
  }

  if (item.read) {
    // Messenger sends read.watermark; Instagram's messaging_seen sends read.mid and the event timestamp
    // (everything before the seen moment counts as read; the mid itself is read exactly).
    const watermark = typeof item.read.watermark === "number" ? item.read.watermark : item.timestamp;
    if (typeof watermark !== "number") return [];
    const at = new Date(watermark);
    return [...exactStatuses(item.read.mid ? [item.read.mid] : [], "read", at), { kind: "watermark", from, status: "read", watermark: at }];
  }

  options.log.debug({ keys: Object.keys(item) }, "meta messaging item ignored");
  return [];
}

function exactStatuses(mids: string[], status: "delivered" | "read", timestamp: Date): InboundEvent[] {
  return mids.filter((mid) => typeof mid === "string" && mid).map((providerMessageId) => ({ kind: "status", providerMessageId, status, timestamp }));
}

async function takeReferral({
  senderId,
  inline,
  options,
}: {
  senderId: string;
  inline?: Record<string, unknown>;
  options: MessagingParseOptions;
}): Promise<Record<string, unknown> | undefined> {
  const key = pendingReferralKey(senderId);
  const pending = await options.state.read(key);
  if (pending) await options.state.write(key, "");
  if (inline) return inline;
  if (!pending) return undefined;
  try {
    return JSON.parse(pending) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}
