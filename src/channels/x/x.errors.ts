/**
 * X API v2 failures (RFC 7807 problem JSON, rate-limit headers) → SendResult.
 *
 * 403 decisions (the exact texts are not documented, so we match on meaning):
 * - the recipient refuses DMs from us — blocked us, or their DM settings exclude us ("not permitted
 *   to send…", "cannot send messages to this user", "not accepting", "message requests") →
 *   USER_BLOCKED: the contact's choice; retrying or re-sending cannot succeed until they write to us.
 * - our app/plan cannot use the endpoint (`client-forbidden`, `unsupported-authentication`, a missing
 *   scope) → PROVIDER_REJECTED with accountStatus "error": an operator must fix the account.
 * - anything else → PROVIDER_REJECTED.
 */
import type { SendResult } from "../channel.types";
import { parseRetryAfter } from "../../platform/http/retry-after";

type Failure = Extract<SendResult, { ok: false }>;

export interface XProblem {
  title?: string;
  type?: string;
  status?: number;
  detail?: string;
  reason?: string;
  errors?: { message?: string; parameters?: Record<string, unknown> }[];
}

const RECIPIENT_REFUSES =
  /block|not permitted to send|cannot send (direct )?messages|can't send (direct )?messages|not accepting|message requests?|does not accept|not allowed to send/i;
const ACCOUNT_PROBLEM = /client-forbidden|unsupported-authentication|client-not-enrolled|scope|attached to a project|access level/i;

export function xFailure(opts: { status: number; problem: XProblem | undefined; headers: Headers; now: Date }): Failure {
  const { status, problem, headers } = opts;
  // v2 puts the general text in `detail` and the specifics (which parameter) in `errors[].message`.
  const texts = [problem?.detail, ...(problem?.errors ?? []).map((e) => e.message)].filter((t): t is string => Boolean(t));
  const detail = texts.length ? texts.join("; ") : (problem?.title ?? `HTTP ${status}`);
  const base = { providerCode: String(status), message: detail };

  // A plain Retry-After (an edge proxy's, or X's own on a 503) counts when the x-rate-limit-* headers say nothing.
  const retryAfterMs = parseRetryAfter({ header: headers.get("retry-after"), now: opts.now });
  if (status === 429) {
    const limit = rateLimitOf(headers, opts.now);
    return {
      ok: false,
      retry: true,
      reason: "RATE_LIMITED",
      retryAfterMs: limit.retryAfterMs ?? retryAfterMs,
      providerCode: "429",
      message: `${detail} (${limit.summary})`,
    };
  }
  if (status === 401) return { ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed", ...base };
  if (status >= 500) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", ...(retryAfterMs !== undefined ? { retryAfterMs } : {}), ...base };
  const text = `${problem?.type ?? ""} ${problem?.reason ?? ""} ${detail}`;
  if (status === 403) {
    if (ACCOUNT_PROBLEM.test(text)) return { ok: false, retry: false, reason: "PROVIDER_REJECTED", accountStatus: "error", ...base };
    if (RECIPIENT_REFUSES.test(text)) return { ok: false, retry: false, reason: "USER_BLOCKED", ...base };
    return { ok: false, retry: false, reason: "PROVIDER_REJECTED", ...base };
  }
  if (status === 404 || ((status === 400 || status === 422) && /participant|user|not found|could not find/i.test(text))) {
    return { ok: false, retry: false, reason: "RECIPIENT_INVALID", ...base };
  }
  return { ok: false, retry: false, reason: "PROVIDER_REJECTED", ...base };
}

/**
 * Which window ran out and when it resets. X sends the 15-minute window in `x-rate-limit-*`; when the
 * per-user 24 h DM cap is the one exhausted it also sends `x-user-limit-24hour-*` [unsure: seen on
 * tweet creation, assumed for DMs], and that reset is the one that matters.
 */
export function rateLimitOf(headers: Headers, now: Date): { retryAfterMs?: number; summary: string } {
  const windows = [
    { name: "24h user", prefix: "x-user-limit-24hour" },
    { name: "24h app", prefix: "x-app-limit-24hour" },
    { name: "15min", prefix: "x-rate-limit" },
  ];
  const parts: string[] = [];
  let retryAfterMs: number | undefined;
  for (const w of windows) {
    const limit = headers.get(`${w.prefix}-limit`);
    const remaining = headers.get(`${w.prefix}-remaining`);
    const reset = headers.get(`${w.prefix}-reset`);
    if (limit === null && remaining === null && reset === null) continue;
    const resetAt = reset !== null && /^\d+$/.test(reset) ? new Date(Number(reset) * 1000) : undefined;
    parts.push(`${w.name} limit ${limit ?? "?"}, remaining ${remaining ?? "?"}, resets ${resetAt ? resetAt.toISOString() : "?"}`);
    // The first exhausted window in this order decides the wait; the 15-min one is the fallback.
    if (retryAfterMs === undefined && resetAt && (remaining === "0" || w.prefix === "x-rate-limit")) {
      retryAfterMs = Math.max(0, resetAt.getTime() - now.getTime());
    }
  }
  return { retryAfterMs, summary: parts.length ? parts.join("; ") : "no rate-limit headers" };
}
