/**
 * nodemailer errors → SendResult. SMTP itself says what is permanent: 5xx replies are, 4xx are not.
 */
import type { SendResult } from "../channel.types";

type Failure = Extract<SendResult, { ok: false }>;

export interface NodemailerError {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  message?: string;
}

const RECIPIENT_CODES = new Set([550, 551, 553]); // mailbox unavailable / not local / name not allowed
const NETWORK_CODES = new Set(["ECONNECTION", "ETIMEDOUT", "ESOCKET", "EDNS", "ECONNRESET", "ECONNREFUSED", "EPROTOCOL"]);

export function smtpFailure(err: NodemailerError): Failure {
  const code = err.responseCode;
  const message = (err.response ?? err.message ?? "SMTP error").trim();
  const providerCode = code ? String(code) : err.code;
  if (err.code === "EAUTH" || code === 535 || code === 534 || code === 530) {
    return { ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed", providerCode, message };
  }
  if (code !== undefined && code >= 500) {
    if (RECIPIENT_CODES.has(code)) return { ok: false, retry: false, reason: "RECIPIENT_INVALID", providerCode, message };
    if (code === 552) return { ok: false, retry: false, reason: "MEDIA_INVALID", providerCode, message }; // message size exceeded
    return { ok: false, retry: false, reason: "PROVIDER_REJECTED", providerCode, message };
  }
  if (code !== undefined && code >= 400) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode, message };
  if (err.code && NETWORK_CODES.has(err.code)) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode, message };
  // EENVELOPE without a reply code is our own address problem (no recipient, malformed address).
  if (err.code === "EENVELOPE") return { ok: false, retry: false, reason: "RECIPIENT_INVALID", providerCode, message };
  // Attachment that could not be read/fetched.
  if (err.code === "EMESSAGE" || err.code === "ENOENT" || err.code === "EFETCH")
    return { ok: false, retry: false, reason: "MEDIA_INVALID", providerCode, message };
  return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode, message };
}
