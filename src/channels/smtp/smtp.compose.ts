/**
 * OutboundMessage → nodemailer message options. Threading: our own `Message-ID` is
 * `<{messageId}@{domain of from}>` (stable across retries, so a retried send that did reach the
 * server is recognisable as the same message), replies carry `In-Reply-To` and `References`.
 */
import type Mail from "nodemailer/lib/mailer";
import type { OutboundMessage } from "../channel.types";
import { fromDomain, type SmtpSettings } from "./smtp.settings";

export function emailMessageId(opts: { messageId: string; from: string }): string {
  return `<${opts.messageId}@${fromDomain(opts.from)}>`;
}

export function composeEmail(opts: { message: OutboundMessage; settings: SmtpSettings; now: Date }): { mail: Mail.Options; messageId: string } {
  const { message, settings } = opts;
  const messageId = emailMessageId({ messageId: message.messageId, from: settings.from });
  const mail: Mail.Options = {
    from: settings.from,
    to: message.to.displayName ? { name: message.to.displayName, address: message.to.value } : message.to.value,
    messageId,
    date: opts.now,
  };
  if (message.replyTo) {
    mail.inReplyTo = message.replyTo.providerMessageId;
    // RFC 5322 §3.6.4: the parent's References followed by the parent's Message-ID.
    const chain = [...(message.replyTo.references ?? []), message.replyTo.providerMessageId];
    mail.references = [...new Set(chain)];
  }
  const content = message.content;
  switch (content.type) {
    case "email":
      Object.assign(mail, { subject: content.email.subject ?? "", text: content.email.text, html: content.email.html });
      break;
    case "template":
      Object.assign(mail, { subject: content.template.rendered.subject ?? "", text: content.template.rendered.text, html: content.template.rendered.html });
      if (content.template.headerMedia) mail.attachments = [attachmentOf(content.template.headerMedia)];
      break;
    case "text":
      Object.assign(mail, { subject: "", text: content.text });
      break;
    case "media":
      Object.assign(mail, { subject: "", text: content.media.caption ?? "", attachments: [attachmentOf(content.media)] });
      break;
  }
  return { mail, messageId };
}

function attachmentOf(media: { url?: string; file?: { path: string; filename: string; mimeType: string } }): Mail.Attachment {
  if (media.file) return { filename: media.file.filename, path: media.file.path, contentType: media.file.mimeType };
  // NB! nodemailer fetches `href` itself at send time (not through ctx.fetch): an unreachable URL fails the send.
  return { filename: media.url ? decodeURIComponent(new URL(media.url).pathname.split("/").pop() || "attachment") : "attachment", href: media.url };
}
