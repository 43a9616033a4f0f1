/**
 * TikTok API for Business answers `{code, message, request_id, data}`; a non-zero `code` is an error,
 * usually with HTTP 200. Codes below are the API-wide ones of API for Business v1.3 [unsure: taken from
 * its general response-code list and from partner integrations, not from the partner-only Business
 * Messaging reference]; messaging-specific codes (reply window closed, conversation not found…) are
 * not public, so they land on PROVIDER_REJECTED with TikTok's own code and text kept for the operator.
 */
import type { SendResult } from "../channel.types";

type Failure = Extract<SendResult, { ok: false }>;

const AUTH_CODES = new Set([40102, 40104, 40105]); // access token expired / empty / incorrect or revoked
const RATE_CODES = new Set([40100]); // too many requests (QPS/QPM/QPD)
const PERMISSION_CODES = new Set([40001]); // no permission for this business / scope
const TRANSIENT_CODES = new Set([50000, 50002]); // system error, try again

export function tiktokFailure(opts: { code: number; message: string }): Failure {
  const base = { providerCode: String(opts.code), message: opts.message || `TikTok code ${opts.code}` };
  if (AUTH_CODES.has(opts.code)) return { ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed", ...base };
  if (RATE_CODES.has(opts.code)) return { ok: false, retry: true, reason: "RATE_LIMITED", ...base };
  if (TRANSIENT_CODES.has(opts.code)) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", ...base };
  if (PERMISSION_CODES.has(opts.code)) return { ok: false, retry: false, reason: "PROVIDER_REJECTED", accountStatus: "error", ...base };
  return { ok: false, retry: false, reason: "PROVIDER_REJECTED", ...base };
}

/** An answer that is not TikTok's `{code: 0}`; `retryAfterMs` is the gateway's Retry-After, if it sent one. */
export function tiktokHttpFailure(opts: { status?: number; message: string; retryAfterMs?: number }): Failure {
  const wait = opts.retryAfterMs !== undefined ? { retryAfterMs: opts.retryAfterMs } : {};
  if (opts.status === 401) return { ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed", providerCode: "401", message: opts.message };
  if (opts.status === 429) return { ok: false, retry: true, reason: "RATE_LIMITED", providerCode: "429", message: opts.message, ...wait };
  if (opts.status !== undefined && opts.status >= 400 && opts.status < 500) {
    return { ok: false, retry: false, reason: "PROVIDER_REJECTED", providerCode: String(opts.status), message: opts.message };
  }
  // 5xx, a dropped connection, or an answer that is not TikTok JSON.
  return {
    ok: false,
    retry: true,
    reason: "PROVIDER_UNAVAILABLE",
    providerCode: opts.status ? String(opts.status) : undefined,
    message: opts.message,
    ...wait,
  };
}
