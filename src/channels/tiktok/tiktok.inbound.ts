/**
 * TikTok Business Messaging webhooks: `Tiktok-Signature` verification and event parsing.
 *
 * Signature: `Tiktok-Signature: t=<unix seconds>,s=<hex HMAC-SHA256(client_secret, "<t>.<raw body>")>`.
 * Tolerance: 5 minutes either way against the appliance clock. Chatwoot accepts only 5 s, which turns
 * ordinary clock drift of an on-prem VM (no NTP, a suspended host) or one slow proxy hop into lost
 * messages; 5 minutes is the common replay window (Stripe uses the same) and duplicates inside it are
 * caught by the engine's provider-message-id check anyway.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { InboundContent, InboundEvent } from "../channel.types";

export const TIKTOK_SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;

export function tiktokSignature(opts: { clientSecret: string; timestamp: string; rawBody: Uint8Array | string }): string {
  return createHmac("sha256", opts.clientSecret).update(`${opts.timestamp}.`).update(opts.rawBody).digest("hex");
}

export function tiktokSignatureValid(opts: {
  clientSecret: string;
  header: string | null;
  rawBody: Uint8Array;
  now: Date;
}): { ok: true } | { ok: false; why: string } {
  if (!opts.clientSecret) return { ok: false, why: "no client_secret configured" };
  if (!opts.header) return { ok: false, why: "Tiktok-Signature missing" };
  const parts = Object.fromEntries(
    opts.header.split(",").map((p) => {
      const i = p.indexOf("=");
      return [p.slice(0, i).trim(), p.slice(i + 1).trim()];
    }),
  );
  const t = parts.t;
  const s = parts.s;
  if (!t || !/^\d+$/.test(t) || !s || !/^[0-9a-f]+$/i.test(s)) return { ok: false, why: "malformed Tiktok-Signature" };
  if (Math.abs(opts.now.getTime() - Number(t) * 1000) > TIKTOK_SIGNATURE_TOLERANCE_MS) return { ok: false, why: "timestamp outside the 5 minute window" };
  const expected = Buffer.from(tiktokSignature({ clientSecret: opts.clientSecret, timestamp: t, rawBody: opts.rawBody }), "hex");
  const given = Buffer.from(s, "hex");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, why: "signature mismatch" };
  return { ok: true };
}

export interface TiktokWebhookBody {
  event: string;
  user_openid?: string;
  client_key?: string;
  create_time?: number;
  /** A JSON document in a string. */
  content: string;
}

interface TiktokMessageContent {
  conversation_id?: string;
  message_id?: string;
  timestamp?: number;
  type?: string;
  text?: { body?: string };
  image?: { media_id?: string };
  share_post?: { embed_url?: string; item_id?: string };
  from_user?: { id?: string; role?: string };
  to_user?: { id?: string; role?: string };
  [other: string]: unknown;
}

export function parseTiktokWebhook(opts: { body: TiktokWebhookBody; businessId: string }): { events: InboundEvent[] } {
  const { body, businessId } = opts;
  if (!body || typeof body !== "object") return { events: [] };
  if (body.event !== "im_receive_msg" && body.event !== "im_mark_read_msg") return { events: [] }; // im_send_msg: our own sends echoed
  let content: TiktokMessageContent;
  try {
    content = typeof body.content === "string" ? JSON.parse(body.content) : (body.content as TiktokMessageContent);
  } catch {
    return { events: [] };
  }
  const fromId = content.from_user?.id;
  const toId = content.to_user?.id;
  const timestamp = new Date(Number(content.timestamp ?? body.create_time ?? 0));

  if (body.event === "im_receive_msg") {
    // Incoming means addressed to us; the same event also reports what the business sent from the app.
    if (toId !== businessId || !fromId || !content.message_id) return { events: [] };
    if (typeof fromId !== "string" || typeof content.message_id !== "string") throw new Error("from_user.id or message_id is not a string");
    if (Number.isNaN(timestamp.getTime())) throw new Error("the timestamp is not a time");
    return {
      events: [
        {
          kind: "message",
          providerMessageId: content.message_id,
          from: { value: fromId },
          timestamp,
          content: contentOf(content),
          conversationRef: content.conversation_id,
        },
      ],
    };
  }
  // im_mark_read_msg [unsure: payload shape not public]: the reader is the party that is not us.
  const reader = fromId && fromId !== businessId ? fromId : toId && toId !== businessId ? toId : undefined;
  if (!reader) return { events: [] };
  return { events: [{ kind: "watermark", from: { value: reader }, status: "read", watermark: timestamp }] };
}

function contentOf(c: TiktokMessageContent): InboundContent {
  if (c.type === "text") return { type: "text", text: c.text?.body ?? "" };
  if (c.type === "image" && c.image?.media_id) return { type: "media", media: { kind: "image", providerMediaId: c.image.media_id } };
  return { type: "unsupported", raw: c };
}
