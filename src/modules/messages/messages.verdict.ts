/**
 * The send verdict on a contact: its eligibility facts looked up, channel.eligibility.ts's verdict on them, and
 * that verdict worded as POST /messages' error. Used by the send, the scheduled send's release and the campaigns.
 */
import { eligibility, type ExclusionReason, type Verdict } from "../../channels/channel.eligibility";
import { CHANNEL_RULES, type MessageType } from "../../channels/channel.rules";
import type { Channel, FailureReason } from "../../channels/channel.types";
import type { MessagesNeeds } from "./messages.needs";
import { AppError } from "../../platform/errors";
import { contactSendFacts } from "../contacts/contacts.service";
import { channelState } from "../conversations/conversations.service";

type RefusalContext = { channel: Channel; lastInboundAt: Date | null };

/** A closed window: the contact must write first (contactStarts channels), or the timed window has closed. */
function windowClosed({ channel, lastInboundAt }: RefusalContext): AppError {
  const rule = CHANNEL_RULES[channel];
  const window = rule.window;
  if (window.kind !== "since_last_inbound")
    return new AppError("MESSAGING_WINDOW_CLOSED", `On ${channel} the contact must have written to this account first`, [
      { pointer: "/to", message: "no prior conversation with this account" },
    ]);
  const hint = rule.types.includes("template") && !window.appliesTo.includes("template") ? "; send an approved template instead" : "";
  const closesAt = lastInboundAt ? new Date(lastInboundAt.getTime() + window.hours * 3_600_000) : null;
  return new AppError(
    "MESSAGING_WINDOW_CLOSED",
    closesAt
      ? `The ${window.hours} h window closed at ${closesAt.toISOString()}${hint}`
      : `The contact has not written to this account; the ${window.hours} h window is closed${hint}`,
    [{ pointer: "/type", message: "outside the messaging window" }],
  );
}

/**
 * How a one-to-one send words each refusal (channel.eligibility.ts decides; this only words it): POST /messages'
 * HTTP error, and the failure reason a scheduled message refused when it falls due is stored with (its code is
 * the error's).
 */
const REFUSALS: Record<ExclusionReason, { failure: FailureReason; error: (c: RefusalContext) => AppError }> = {
  noIdentity: {
    failure: "RECIPIENT_INVALID",
    error: ({ channel }) =>
      new AppError("VALIDATION_FAILED", `The contact has no ${channel} identity`, [{ pointer: "/to", message: `no ${channel} identity` }]),
  },
  blocked: {
    failure: "CONTACT_BLOCKED",
    error: () => new AppError("CONTACT_BLOCKED", "The contact is blocked", [{ pointer: "/to", message: "blocked contact" }]),
  },
  noConsent: {
    failure: "CONTACT_BLOCKED",
    error: ({ channel }) => new AppError("CONTACT_BLOCKED", `The contact opted out of ${channel}`, [{ pointer: "/to", message: `opted out of ${channel}` }]),
  },
  noPriorConversation: { failure: "MESSAGING_WINDOW_CLOSED", error: windowClosed },
  outsideWindow: { failure: "MESSAGING_WINDOW_CLOSED", error: windowClosed },
};

/** POST /messages' HTTP error for an eligibility refusal. */
export function refusal(verdict: Extract<Verdict, { ok: false }>, context: RefusalContext): AppError {
  return REFUSALS[verdict.reason].error(context);
}

/** The failure reason a scheduled message refused when it falls due is stored with. */
export function refusalReason(verdict: Extract<Verdict, { ok: false }>): FailureReason {
  return REFUSALS[verdict.reason].failure;
}

/**
 * A contact's send facts and its last inbound message on the account — those the caller has not already looked up
 * — read together (PostgreSQL: pipelined in one round trip; SQLite: each answers at once).
 */
export async function lookUpSendFacts(
  { db }: Pick<MessagesNeeds, "db">,
  q: {
    companyId: string;
    contactId: string;
    channel: Channel;
    channelAccountId: string;
    facts?: Awaited<ReturnType<typeof contactSendFacts>>;
    lastInboundAt?: Date | null;
    /** The contact's row and the identity addressed, when the caller read them in this transaction. */
    known?: Pick<Parameters<typeof contactSendFacts>[0], "contact" | "identity">;
  },
) {
  if (q.facts && q.lastInboundAt !== undefined) return { facts: q.facts, lastInboundAt: q.lastInboundAt };
  const [facts, lastInboundAt] = await Promise.all([
    q.facts ?? contactSendFacts({ db, companyId: q.companyId, contactId: q.contactId, channel: q.channel, ...q.known }),
    q.lastInboundAt !== undefined
      ? q.lastInboundAt
      : channelState({ db, contactId: q.contactId, channelAccountId: q.channelAccountId }).then((s) => s?.lastInboundAt ?? null),
  ]);
  return { facts, lastInboundAt };
}

/**
 * The eligibility facts of a contact on an account, looked up, and the verdict on them. NB! The hot path of
 * POST /messages reads its one contact's facts through point lookups of its own (its row held for the unit,
 * its identities ranked in JS, its consent, its channel state; the rows the caller already read are not read
 * again), not through the audience store's facts query (audience-facts.repository.ts), which is built for sets:
 * its JSON id list and joins cost one contact ~26 µs against ~15 µs here (SQLite, measured when the two were
 * unified), and it cannot hold the row. The facts are the same, and so is the decision: `eligibility`.
 */
export async function sendVerdict(
  deps: Pick<MessagesNeeds, "db" | "now">,
  {
    companyId,
    contactId,
    channel,
    channelAccountId,
    type,
    purpose,
    ...given
  }: {
    companyId: string;
    contactId: string;
    channel: Channel;
    channelAccountId: string;
    type: MessageType;
    purpose: "direct" | "campaign";
    /** The contact's send facts when the caller looked them up in this transaction. */
    facts?: Awaited<ReturnType<typeof contactSendFacts>>;
    /** The contact's last inbound message on the account, when the caller looked it up in this transaction. */
    lastInboundAt?: Date | null;
  },
) {
  const { facts, lastInboundAt } = await lookUpSendFacts(deps, { companyId, contactId, channel, channelAccountId, ...given });
  const verdict = eligibility({
    rule: CHANNEL_RULES[channel],
    identity: facts?.identity ?? null,
    blocked: facts?.blocked ?? false,
    consent: facts?.consent ?? "unknown",
    lastInboundAt,
    messageType: type,
    purpose,
    now: deps.now(),
  });
  return { verdict, lastInboundAt, address: facts?.identity?.value ?? null };
}
