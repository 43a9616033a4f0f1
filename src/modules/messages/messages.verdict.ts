/**
 * The send verdict on a contact: its eligibility facts looked up, channel.eligibility.ts's verdict on them, and
 * that verdict worded as POST /messages' error. Used by the send, the scheduled send's release and the campaigns.
 */
import { eligibility, type Verdict } from "../../channels/channel.eligibility";
import { CHANNEL_RULES, type MessageType } from "../../channels/channel.rules";
import type { Channel } from "../../channels/channel.types";
import type { MessagesNeeds } from "./messages.needs";
import { AppError } from "../../platform/errors";
import { contactSendFacts } from "../contacts/contacts.service";
import { channelState } from "../conversations/conversations.service";

/** POST /messages' HTTP error for an eligibility refusal (channel.eligibility.ts decides; this only words it). */
export function refusal(verdict: Extract<Verdict, { ok: false }>, { channel, lastInboundAt }: { channel: Channel; lastInboundAt: Date | null }): AppError {
  const rule = CHANNEL_RULES[channel];
  switch (verdict.reason) {
    case "noIdentity":
      return new AppError("VALIDATION_FAILED", `The contact has no ${channel} identity`, [{ pointer: "/to", message: `no ${channel} identity` }]);
    case "blocked":
      return new AppError("CONTACT_BLOCKED", "The contact is blocked", [{ pointer: "/to", message: "blocked contact" }]);
    case "noConsent":
      return new AppError("CONTACT_BLOCKED", `The contact opted out of ${channel}`, [{ pointer: "/to", message: `opted out of ${channel}` }]);
  }
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

/** The eligibility facts of a contact on an account, looked up, and the verdict on them. */
export async function sendVerdict(
  deps: Pick<MessagesNeeds, "db" | "now">,
  {
    companyId,
    contactId,
    channel,
    channelAccountId,
    type,
    purpose,
    facts,
  }: {
    companyId: string;
    contactId: string;
    channel: Channel;
    channelAccountId: string;
    type: MessageType;
    purpose: "direct" | "campaign";
    /** The contact's send facts when the caller looked them up in this transaction. */
    facts?: Awaited<ReturnType<typeof contactSendFacts>>;
  },
) {
  facts ??= await contactSendFacts({ db: deps.db, companyId, contactId, channel });
  const lastInboundAt = (await channelState({ db: deps.db, contactId, channelAccountId }))?.lastInboundAt ?? null;
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
