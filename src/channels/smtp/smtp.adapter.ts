/**
 * E-mail over SMTP (nodemailer, pooled transport), inbound by our own SMTP listener and/or IMAP IDLE.
 * There is no webhook traffic for e-mail, and SMTP has no delivery or read receipts.
 */
import nodemailer, { type Transporter } from "nodemailer";
import type SMTPPool from "nodemailer/lib/smtp-pool";
import type { AdapterContext, ChannelAdapter, ChannelCapabilities, OutboundMessage, ProviderDefinition, SendResult, WebhookResult } from "../channel.types";
import { mediaUrlFailure } from "../media-bytes";
import { attachmentUrl, composeEmail, type FetchedAttachment } from "./smtp.compose";
import { smtpFailure, type NodemailerError } from "./smtp.errors";
import { startImapPoller, type ImapPoller } from "./smtp.imap";
import { parseListen, startInboundSmtp, type InboundSmtpListener } from "./smtp.listener";
import { readSmtpSettings, smtpSettings } from "./smtp.settings";

const MB = 1024 * 1024;

/** Common attachment types; 20 MB leaves room for base64 (+37 %) under the usual 25–35 MB server limits. */
export const smtpCapabilities: ChannelCapabilities = {
  webhookAuth: "provider-signature",
  deliveryReceipts: false,
  readReceipts: false,
  media: Object.fromEntries(
    [
      "image/jpeg",
      "image/png",
      "image/gif",
      "image/webp",
      "application/pdf",
      "text/plain",
      "text/csv",
      "application/zip",
      "video/mp4",
      "audio/mpeg",
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ].map((t) => [t, 20 * MB]),
  ),
};

const ATTACHMENT_MAX = Math.max(...Object.values(smtpCapabilities.media));

export function createSmtpAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings = readSmtpSettings(ctx.account.settings);
  if (settings.inbound_smtp_listen) parseListen(settings.inbound_smtp_listen); // a bad value stops start-up, not the first mail
  let transport: Transporter<SMTPPool.SentMessageInfo> | undefined;
  let listener: InboundSmtpListener | undefined;
  let imap: ImapPoller | undefined;

  function transporter() {
    transport ??= nodemailer.createTransport({
      pool: true,
      host: settings.host,
      port: settings.port,
      secure: settings.secure,
      auth: settings.username ? { user: settings.username, pass: settings.password } : undefined,
      tls: { rejectUnauthorized: settings.tls_reject_unauthorized },
      dkim:
        settings.dkim_domain && settings.dkim_private_key
          ? { domainName: settings.dkim_domain, keySelector: settings.dkim_selector, privateKey: settings.dkim_private_key }
          : undefined,
      // A relay that accepts the connection and then says nothing is a failed attempt, retried (channel.types.ts).
      connectionTimeout: ctx.requestTimeoutMs,
      greetingTimeout: ctx.requestTimeoutMs,
      socketTimeout: ctx.requestTimeoutMs,
    });
    return transport;
  }

  async function send(message: OutboundMessage): Promise<SendResult> {
    let fetched: FetchedAttachment | undefined;
    const url = attachmentUrl(message);
    if (url) {
      // Any type may be attached; the size is capped at the largest stored-file limit while streaming.
      const got = await ctx.fetchUrl({ url, maxBytes: ATTACHMENT_MAX });
      if (!got.ok) return mediaUrlFailure(got);
      fetched = { content: got.bytes, contentType: got.contentType };
    }
    const { mail, messageId } = composeEmail({ message, settings, now: ctx.now(), fetched });
    try {
      const info = await transporter().sendMail(mail);
      if (info.rejected?.length) {
        return { ok: false, retry: false, reason: "RECIPIENT_INVALID", message: `rejected: ${info.rejected.join(", ")} ${info.response ?? ""}`.trim() };
      }
      return { ok: true, providerMessageId: messageId };
    } catch (err) {
      const failure = smtpFailure(err as NodemailerError);
      if (failure.accountStatus === "auth_failed") {
        // A pooled connection that failed AUTH is useless; start fresh once the operator fixed the password.
        transport?.close();
        transport = undefined;
      }
      return failure;
    }
  }

  async function handleWebhook(): Promise<WebhookResult> {
    return { response: { status: 404, body: "e-mail accounts receive by SMTP or IMAP, not by webhook" }, events: [] };
  }

  async function start(): Promise<void> {
    if (settings.inbound_smtp_listen && !listener) listener = await startInboundSmtp({ ctx, listen: settings.inbound_smtp_listen });
  }

  async function startPolling(): Promise<void> {
    if (settings.imap_host && !imap) imap = startImapPoller({ ctx, settings });
  }

  async function stopPolling(): Promise<void> {
    const i = imap;
    imap = undefined;
    await i?.stop();
  }

  async function stop(): Promise<void> {
    const [l, i, t] = [listener, imap, transport];
    listener = imap = transport = undefined;
    t?.close();
    await Promise.all([l?.stop(), i?.stop()]);
  }

  return {
    capabilities: smtpCapabilities,
    send,
    handleWebhook,
    start,
    startPolling,
    stopPolling,
    stop,
    /** Port the inbound listener really bound (listen "127.0.0.1:0" in tests). Not part of the contract. */
    get inboundPort() {
      return listener?.port;
    },
  } as ChannelAdapter & { readonly inboundPort: number | undefined };
}

export const smtpProvider: ProviderDefinition<typeof smtpSettings> = {
  name: "smtp",
  channels: ["email"],
  settings: smtpSettings,
  create: createSmtpAdapter,
};
