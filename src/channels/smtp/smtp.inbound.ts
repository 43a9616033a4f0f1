/**
 * A received e-mail (parsed by mailparser) → an inbound message event. Used by the inbound SMTP
 * listener and the IMAP poller alike.
 */
import { createHash } from "node:crypto";
import type { ParsedMail } from "mailparser";
import type { InboundEvent } from "../channel.types";

export function emailToEvent(opts: { parsed: ParsedMail; raw: Uint8Array; now: Date }): InboundEvent | undefined {
  const { parsed } = opts;
  const sender = parsed.from?.value.find((a) => a.address);
  if (!sender?.address) return undefined; // no usable From: nothing to attach it to
  // Mail without a Message-ID still needs a stable id so the engine's duplicate check works on re-delivery.
  const providerMessageId = parsed.messageId ?? `<${createHash("sha256").update(opts.raw).digest("hex")}@switchboard.invalid>`;
  const event: Extract<InboundEvent, { kind: "message" }> = {
    kind: "message",
    providerMessageId,
    from: { value: sender.address.toLowerCase(), displayName: sender.name || undefined },
    timestamp: parsed.date ?? opts.now,
    content: { type: "email", email: { subject: parsed.subject, text: parsed.text, html: parsed.html || undefined } },
  };
  if (parsed.inReplyTo) event.inReplyTo = parsed.inReplyTo.trim();
  return event;
}
