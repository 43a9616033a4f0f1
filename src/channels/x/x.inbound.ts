/**
 * Account Activity API webhooks: the CRC handshake, the `x-twitter-webhooks-signature` check, and the
 * DM events of a delivery → InboundEvents.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { AdapterContext, InboundContent, InboundEvent } from "../channel.types";
import { digits, epochMs, eventsOfEach, text } from "../inbound-entries";

/** `sha256=<base64 HMAC-SHA256(consumer_secret, payload)>`: the CRC answer and the delivery signature alike. */
export function xSignature(consumerSecret: string, payload: string | Uint8Array): string {
  return `sha256=${createHmac("sha256", consumerSecret).update(payload).digest("base64")}`;
}

/**
 * The shape of a CRC token X sends (base64url-ish, ≤ 128 characters).
 * NB! The CRC answer is the same HMAC, under the same secret, as a delivery's signature: signing whatever a
 * caller puts in `crc_token` would sign forged deliveries for them (a JSON DM body's HMAC is its valid
 * `x-twitter-webhooks-signature`). No JSON object or array can be written in these characters.
 */
export const CRC_TOKEN = /^[A-Za-z0-9_=+/-]{1,128}$/;

/** The CRC answer, or null when the token is not of X's shape (and must not be signed). */
export function crcResponse(consumerSecret: string, crcToken: string): { response_token: string } | null {
  if (!CRC_TOKEN.test(crcToken)) return null;
  return { response_token: xSignature(consumerSecret, crcToken) };
}

export function xSignatureValid(opts: { consumerSecret: string; rawBody: Uint8Array; header: string | null }): boolean {
  if (!opts.header || !opts.consumerSecret) return false;
  const expected = Buffer.from(xSignature(opts.consumerSecret, opts.rawBody));
  const given = Buffer.from(opts.header.trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}

interface XUser {
  id: string;
  name?: string;
  screen_name?: string;
}
interface XDmEvent {
  type: string;
  id: string;
  created_timestamp: string;
  message_create?: {
    target?: { recipient_id: string };
    sender_id: string;
    message_data?: {
      text?: string;
      attachment?: { type: string; media?: { id_str?: string; media_url_https?: string; type?: string; url?: string } };
      /** A tap on one of our quick-reply options: the option's metadata; the text is its label. */
      quick_reply_response?: { type?: string; metadata?: string };
    };
  };
}
export interface XActivityPayload {
  for_user_id?: string;
  direct_message_events?: XDmEvent[];
  direct_message_mark_read_events?: { created_timestamp: string; sender_id: string; target?: { recipient_id: string }; last_read_event_id?: string }[];
  users?: Record<string, XUser>;
  [other: string]: unknown;
}

export function parseXActivity(opts: { payload: XActivityPayload; ourUserId: string; log: AdapterContext["log"] }): { events: InboundEvent[] } {
  const { payload, ourUserId, log } = opts;
  if (!payload || typeof payload !== "object") return { events: [] };
  // One app webhook can serve several subscribed users; this account only handles its own.
  if (payload.for_user_id !== undefined && payload.for_user_id !== ourUserId) return { events: [] };
  const users = payload.users && typeof payload.users === "object" ? payload.users : {};
  const sender = (id: unknown) => {
    if (!digits(id)) throw new Error("sender_id is not an X user id");
    return { value: id as string, username: text(users[id as string]?.screen_name), displayName: text(users[id as string]?.name) };
  };
  // Event by event: a malformed one is skipped (logged), the rest kept.
  const what = "x webhook";
  const messages = eventsOfEach<XDmEvent>(payload.direct_message_events, { log, what }, (dm) => {
    const create = dm.message_create;
    if (dm.type !== "message_create" || !create) return [];
    // Our own sends (from this appliance or the X app) are echoed to the webhook: not inbound.
    if (create.sender_id === ourUserId) return [];
    if (!text(dm.id)) throw new Error("a DM event without an id");
    return [
      {
        kind: "message",
        providerMessageId: dm.id,
        from: sender(create.sender_id),
        timestamp: epochMs(dm.created_timestamp),
        content: contentOf(create.message_data),
      },
    ];
  });
  const reads = eventsOfEach<NonNullable<XActivityPayload["direct_message_mark_read_events"]>[number]>(
    payload.direct_message_mark_read_events,
    { log, what },
    (read) => {
      if (read.sender_id === ourUserId) return []; // we marked their messages read
      // X reports the last event id read, not a time; the read event's own time bounds every message of
      // ours sent before it, which is what a watermark means.
      return [{ kind: "watermark", from: sender(read.sender_id), status: "read", watermark: epochMs(read.created_timestamp) }];
    },
  );
  return { events: [...messages, ...reads] };
}

function contentOf(data: NonNullable<XDmEvent["message_create"]>["message_data"]): InboundContent {
  const text = data?.text ?? "";
  const tapped = data?.quick_reply_response;
  // DESIGN §16: X names no message the tap answers (inReplyTo stays null).
  if (tapped?.type === "options" && typeof tapped.metadata === "string" && tapped.metadata)
    return { type: "interactive", interactive: { replyId: tapped.metadata, replyTitle: data?.text ?? null } };
  const media = data?.attachment?.type === "media" ? data.attachment.media : undefined;
  if (media) {
    // X appends the attachment's t.co link to the text; drop it from the caption.
    const caption = (media.url ? text.replace(media.url, "") : text).trim() || undefined;
    const kind = media.type === "photo" ? "image" : "video"; // photo | video | animated_gif
    return { type: "media", media: { kind, providerMediaId: media.id_str, url: media.media_url_https, caption } };
  }
  return { type: "text", text };
}
