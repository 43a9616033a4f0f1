/**
 * Send eligibility (DESIGN §9): ONE pure verdict on whether a contact can be sent a message of a given type
 * on a channel account now. POST /messages turns a refusal into its HTTP error, the campaign estimate counts
 * the reasons over an audience, and the campaign fan-out records them per recipient. No HTTP, no database:
 * callers look the facts up and pass them in, so the same rules answer all three.
 *
 * The reasons, and the facts that refuse each, are EXCLUSIONS: one entry per reason, highest precedence first
 * (a contact is refused for exactly one, the first whose test holds).
 */
import type { ChannelRule, MessageType } from "./channel.rules";

export interface EligibilityFacts {
  rule: ChannelRule;
  /** The contact's identity on the channel, or null. */
  identity: { status: "verified" | "pending" | string } | null;
  blocked: boolean;
  /** Consent on the channel; no row is `unknown`. */
  consent: "opted_in" | "opted_out" | "unknown" | string;
  /** Provider timestamp of the contact's last inbound message on this channel account, or null. */
  lastInboundAt: Date | number | null;
  messageType: MessageType;
  /** `campaign`: bulk sends need explicit opt-in and a verified identity. */
  purpose: "direct" | "campaign";
  now: Date | number;
}

const HOUR = 3_600_000;
const ms = (d: Date | number) => (typeof d === "number" ? d : d.getTime());

/**
 * The messaging window of a channel for a contact: whether it is open now, and when it closes (null when the
 * channel has no timed window, or the contact never wrote). The one place the window arithmetic lives.
 */
export function windowState({ rule, lastInboundAt, now }: { rule: ChannelRule; lastInboundAt: Date | number | null; now: Date | number }): {
  open: boolean;
  expiresAt: Date | null;
} {
  const w = rule.window;
  if (w.kind === "none") return { open: true, expiresAt: null };
  if (lastInboundAt === null) return { open: false, expiresAt: null };
  if (w.kind === "contact_wrote_first") return { open: true, expiresAt: null };
  const expiresAt = new Date(ms(lastInboundAt) + w.hours * HOUR);
  return { open: expiresAt.getTime() > ms(now), expiresAt };
}

/**
 * The window as a cut-off for counting in bulk: a last inbound message after the returned instant (ms) keeps
 * the window open now; null when the channel's window does not apply to `messageType` (nothing to look up).
 * Agrees with `windowState`: open ⇔ lastInboundAt > cut-off.
 */
export function windowCutoff(rule: ChannelRule, messageType: MessageType, now: Date | number): number | null {
  const w = rule.window;
  if (w.kind === "none" || !w.appliesTo.includes(messageType)) return null;
  if (w.kind === "contact_wrote_first") return Number.MIN_SAFE_INTEGER;
  return ms(now) - w.hours * HOUR;
}

/** Whether the channel's window applies to the message's type (else the window tests pass). */
const windowApplies = ({ rule, messageType }: EligibilityFacts) => rule.window.kind !== "none" && rule.window.appliesTo.includes(messageType);

/**
 * Why a send is refused, highest precedence first, each reason with its test of the facts. A new reason is one
 * entry here (and, if it reads a fact not yet in EligibilityFacts, that fact's lookups: the audience store's
 * audience-facts.repository.ts and the single send's messages.verdict.ts) plus its counter column in campaigns.
 */
export const EXCLUSIONS = {
  /** No identity on the channel (campaigns: also when the only one is `pending`, an @username never resolved to a platform user id). */
  noIdentity: (f) => !f.identity || (f.purpose === "campaign" && f.identity.status !== "verified"),
  /** The contact is blocked. */
  blocked: (f) => f.blocked,
  /** One-to-one: consent on the channel is `opted_out`; campaigns: consent on the channel is not `opted_in`. */
  noConsent: (f) => (f.purpose === "campaign" ? f.consent !== "opted_in" : f.consent === "opted_out"),
  /** The channel lets only the contact start (X, Telegram, TikTok) and they never wrote. */
  noPriorConversation: (f) => windowApplies(f) && f.lastInboundAt === null && f.rule.contactStarts,
  /** The channel's window applies to this message type and is closed. */
  outsideWindow: (f) => windowApplies(f) && !windowState(f).open,
} as const satisfies Record<string, (f: EligibilityFacts) => boolean>;

export type ExclusionReason = keyof typeof EXCLUSIONS;
/** The reasons, highest precedence first. */
export const EXCLUSION_REASONS = Object.keys(EXCLUSIONS) as [ExclusionReason, ...ExclusionReason[]];

export type Verdict = { ok: true } | { ok: false; reason: ExclusionReason };

export function eligibility(f: EligibilityFacts): Verdict {
  for (const reason of EXCLUSION_REASONS) if (EXCLUSIONS[reason](f)) return { ok: false, reason };
  return { ok: true };
}
