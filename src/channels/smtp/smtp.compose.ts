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

/** The bytes a media URL served, fetched by the adapter through the guarded fetcher (never by nodemailer). */
export interface FetchedAttachment {
  content: Uint8Array;
  contentType: string;
}

/** The media URL of a message that becomes an attachment, if any (the adapter fetches it before composing). */
export function attachmentUrl(message: OutboundMessage): string | undefined {
  const c = message.content;
  return c.type === "media"
    ? c.media.file
      ? undefined
      : c.media.url
    : c.type === "template" && !c.template.headerMedia?.file
      ? c.template.headerMedia?.url
      : undefined;
}

export function composeEmail(opts: { message: OutboundMessage; settings: SmtpSettings; now: Date; fetched?: FetchedAttachment }): {
  mail: Mail.Options;
  messageId: string;
} {
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
  if (message.unsubscribeUrl)
    // RFC 8058 §3.1: both headers; the URL must be HTTPS for Gmail's one-click (public_url decides), and it
    // must answer a POST without cookies or redirects — /u/{token} does.
    mail.headers = { "List-Unsubscribe": `<${message.unsubscribeUrl}>`, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click" };
  const content = message.content;
  switch (content.type) {
    case "email":
      Object.assign(mail, { subject: content.email.subject ?? "", text: content.email.text, html: content.email.html });
      break;
    case "template":
      Object.assign(mail, { subject: content.template.rendered.subject ?? "", text: content.template.rendered.text, html: content.template.rendered.html });
      if (content.template.headerMedia) mail.attachments = [attachmentOf(content.template.headerMedia, opts.fetched)];
      break;
    case "text":
      Object.assign(mail, { subject: "", text: content.text });
      break;
    case "media":
      Object.assign(mail, { subject: "", text: content.media.caption ?? "", attachments: [attachmentOf(content.media, opts.fetched)] });
      break;
  }
  return { mail, messageId };
}

function attachmentOf(
  media: { url?: string; file?: { path: string; filename: string; mimeType: string } },
  fetched: FetchedAttachment | undefined,
): Mail.Attachment {
  if (media.file) return { filename: media.file.filename, path: media.file.path, contentType: media.file.mimeType };
  // NB! Never `href`: nodemailer would fetch it itself, past the guarded fetcher's address checks (DESIGN §23).
  if (!fetched) throw new Error("composeEmail: a media URL's bytes must be fetched (ctx.fetchUrl) before composing");
  let filename = "attachment";
  try {
    filename = decodeURIComponent(new URL(media.url!).pathname.split("/").pop() || "attachment");
  } catch {}
  return { filename, content: Buffer.from(fetched.content), contentType: fetched.contentType || "application/octet-stream" };
}
