/**
 * Pure parts of source tracking: the click-to-chat link of a source, and what an inbound message's referral
 * (or first text) says about where the contact came from. No database.
 *
 * What providers deliver (PROVIDERS.md, the providers' webhook references):
 * - WhatsApp Click-to-WhatsApp ad: `messages[].referral` {source_url, source_id, source_type: ad|post,
 *   headline, body, media_type, image_url|video_url, thumbnail_url, ctwa_clid}. A plain wa.me link carries
 *   nothing but its prefilled text, so the code travels in that text.
 * - Messenger / Instagram: `referral` {ref, source: SHORTLINK|ADS|CUSTOMER_CHAT_PLUGIN…, type: OPEN_THREAD,
 *   ad_id?, ads_context_data?} — on the message, on a Get Started `postback`, or as a standalone
 *   `messaging_referrals` event (kept by the parser and attached to the sender's next message).
 * - Telegram: `/start <payload>` from a t.me/<bot>?start=<payload> deep link (the parser gives
 *   {type: "deep_link", payload}).
 * - The sandbox: whatever `referral` object the simulation is given (any of the shapes above).
 */
import type { Channel } from "../../channels/channel.types";

export const CODE_PATTERN = "^[A-Za-z0-9_-]{1,64}$";
const CODE = /^[A-Za-z0-9_-]{1,64}$/;

/** The prefilled text of a WhatsApp link: the code travels in it (WhatsApp passes nothing else). */
export const whatsappText = (code: string) => `Hi! (ref ${code})`;

/** The click-to-chat link of a code on a channel account, or null (no link on this channel, or no handle). */
export function chatLink(channel: Channel | string, handle: string | null, code: string): string | null {
  if (!handle) return null;
  const h = encodeURIComponent(handle);
  const c = encodeURIComponent(code);
  switch (channel) {
    case "whatsapp":
      return `https://wa.me/${handle.replace(/\D/g, "")}?text=${encodeURIComponent(whatsappText(code))}`;
    case "messenger":
      return `https://m.me/${h}?ref=${c}`;
    case "instagram":
      return `https://ig.me/m/${h}?ref=${c}`;
    case "telegram":
      return `https://t.me/${h}?start=${c}`;
    default:
      return null;
  }
}

/** What a referral points at: a code of ours, and/or an ad at the platform (id and a name for it). */
export interface ReferralClue {
  code: string | null;
  ad: { id: string; name: string; url: string | null } | null;
}

const str = (v: unknown): string | null => (typeof v === "string" && v.trim() ? v.trim() : typeof v === "number" ? String(v) : null);

export function referralClue(referral: Record<string, unknown> | null | undefined): ReferralClue | null {
  if (!referral || typeof referral !== "object") return null;
  // Messenger/Instagram `ref`, Telegram deep-link `payload` (also the sandbox's either).
  const ref = str(referral.ref) ?? str(referral.payload);
  const code = ref && CODE.test(ref) ? ref : null;
  // WhatsApp CTWA `source_id` (source_type ad|post), Meta Messenger/Instagram ads `ad_id`.
  const adId = str(referral.source_id) ?? str(referral.ad_id);
  const ad = adId
    ? {
        id: adId,
        name: str(referral.headline) ?? str((referral.ads_context_data as Record<string, unknown> | undefined)?.ad_title) ?? `Ad ${adId}`,
        url: str(referral.source_url),
      }
    : null;
  return code || ad ? { code, ad } : null;
}

/** Words of a first message that could be codes (a wa.me prefilled text, a code typed from a poster). */
export function codesInText(text: string): string[] {
  return [...new Set(text.match(/[A-Za-z0-9_-]{1,64}/g) ?? [])].slice(0, 50);
}
