/**
 * `[channels.settings]` of a `provider = "smtp"` account (channel `email`). DESIGN §3 keys plus the
 * additive ones documented here: DKIM (`dkim_*`), `tls_reject_unauthorized`, `imap_secure`,
 * `imap_mailbox`.
 */
import { Type, type Static } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export const smtpSettings = Type.Object(
  {
    host: Type.String({ default: "localhost", description: "Outgoing SMTP server (relay or submission host)." }),
    port: Type.Integer({
      minimum: 1,
      maximum: 65535,
      default: 587,
      description: "587 submission with STARTTLS, 465 implicit TLS (set secure = true), 25 relay.",
    }),
    secure: Type.Boolean({ default: false, description: "true: TLS from the first byte (port 465). false: STARTTLS when the server offers it." }),
    username: Type.String({ default: "", description: "SMTP AUTH user; empty = no authentication (trusted relay)." }),
    password: Type.String({ default: "", description: "SMTP AUTH password (use env: or file:)." }),
    from: Type.String({
      minLength: 3,
      description: 'Sender, e.g. "Shop Support <support@shop.example>". Its domain also names our Message-IDs (<message id>@domain).',
    }),
    tls_reject_unauthorized: Type.Boolean({
      default: true,
      description: "Verify the server certificate (SMTP and IMAP). Set false only for an internal relay with a self-signed certificate.",
    }),
    dkim_domain: Type.String({ default: "", description: "DKIM signing domain (d=); empty = no DKIM signature (the relay may sign instead)." }),
    dkim_selector: Type.String({ default: "", description: "DKIM selector (s=), the DNS record is <selector>._domainkey.<domain>." }),
    dkim_private_key: Type.String({ default: "", description: "DKIM private key in PEM (use file:/path)." }),
    imap_host: Type.String({ default: "", description: "Inbound by IMAP: server to watch for replies (IDLE). Empty = no IMAP." }),
    imap_port: Type.Integer({ minimum: 1, maximum: 65535, default: 993, description: "IMAP port (993 implicit TLS, 143 STARTTLS with imap_secure = false)." }),
    imap_secure: Type.Boolean({ default: true, description: "IMAP over implicit TLS." }),
    imap_username: Type.String({ default: "", description: "IMAP login." }),
    imap_password: Type.String({ default: "", description: "IMAP password (use env: or file:)." }),
    imap_mailbox: Type.String({ default: "INBOX", description: "Mailbox watched for replies." }),
    inbound_smtp_listen: Type.String({
      default: "",
      description:
        'Inbound by SMTP: "host:port" on which the appliance accepts mail itself (e.g. "0.0.0.0:2525" behind your MTA, which forwards replies to it). ' +
        "Plain SMTP without AUTH or TLS: expose it only to your own mail server. Empty = off.",
    }),
  },
  { additionalProperties: true },
);
export type SmtpSettings = Static<typeof smtpSettings>;

export function readSmtpSettings(raw: Record<string, unknown>): SmtpSettings {
  return Value.Default(smtpSettings, structuredClone(raw)) as SmtpSettings;
}

/** The domain of the `from` address ("Shop <a@shop.example>" → "shop.example"). */
export function fromDomain(from: string): string {
  const match = from.match(/@([^<>\s@]+?)>?\s*$/);
  return (match?.[1] ?? "localhost").toLowerCase();
}
