/**
 * Graph API errors → our FailureReason / retry / accountStatus. One table for WhatsApp Cloud, Messenger and
 * Instagram (they share Graph's error format and many codes).
 *
 * Sources: Meta's WhatsApp Cloud API error-codes page, the Messenger Platform "Common Error Codes" page, and
 * ../shared/PROVIDERS.md. Codes they do not list fall back to `is_transient` and the HTTP status.
 */
import type { AccountStatus, FailureReason, SendResult } from "../channel.types";
import { parseRetryAfter } from "../../platform/http/retry-after";

/** Graph's error body: `{"error":{"message","type","code","error_subcode","error_data","fbtrace_id"}}`. */
export interface GraphError {
  message: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  error_data?: unknown;
  error_user_title?: string;
  error_user_msg?: string;
  is_transient?: boolean;
  fbtrace_id?: string;
}

/** The failing half of SendResult. */
export type SendFailure = Extract<SendResult, { ok: false }>;

interface GraphErrorRule {
  reason: FailureReason;
  retry: boolean;
  accountStatus?: AccountStatus;
}

const windowClosed: GraphErrorRule = { reason: "MESSAGING_WINDOW_CLOSED", retry: false };
const rateLimited: GraphErrorRule = { reason: "RATE_LIMITED", retry: true };
const transient: GraphErrorRule = { reason: "PROVIDER_UNAVAILABLE", retry: true };
const templateInvalid: GraphErrorRule = { reason: "TEMPLATE_INVALID", retry: false };
const blocked: GraphErrorRule = { reason: "USER_BLOCKED", retry: false };
const rejected: GraphErrorRule = { reason: "PROVIDER_REJECTED", retry: false };
const mediaInvalid: GraphErrorRule = { reason: "MEDIA_INVALID", retry: false };
const accountBroken: GraphErrorRule = { reason: "PROVIDER_REJECTED", retry: false, accountStatus: "error" };

/**
 * Keyed by `"<code>/<subcode>"` (looked up first) or `"<code>"`. Keep it a table: adding a code is one line.
 */
export const GRAPH_ERROR_RULES: Readonly<Record<string, GraphErrorRule>> = {
  // --- customer-service window
  "131047": windowClosed, // WA: re-engagement message (more than 24 h since the customer last wrote)
  "10/2018278": windowClosed, // Messenger: sent outside of allowed window
  "10/2534022": windowClosed, // Instagram: sent outside of allowed window [unsure: seen in integrations, not in Meta's table]
  // --- throttling (retry with backoff; Graph sends no Retry-After for these)
  "130429": rateLimited, // WA: Cloud API throughput reached
  "131056": rateLimited, // WA: too many messages to the same pair of numbers
  "131048": rateLimited, // WA: spam rate limit hit
  "80007": rateLimited, // WA: WABA rate limit
  "613": rateLimited, // Messenger: calls to this API have exceeded the rate limit
  "4": rateLimited, // app request limit reached
  "17": rateLimited, // user request limit reached
  "32": rateLimited, // page request limit reached
  // --- credentials
  "190": { reason: "AUTH_FAILED", retry: false, accountStatus: "auth_failed" }, // invalid/expired access token
  // --- recipient
  "131026": { reason: "RECIPIENT_INVALID", retry: false }, // WA: message undeliverable (not on WhatsApp, old app, ...)
  "100/2018001": { reason: "RECIPIENT_INVALID", retry: false }, // Messenger: no matching user found
  "551": blocked, // Messenger/IG: this person isn't available right now (blocked us / deactivated)
  "551/1545041": blocked,
  // --- templates
  "132000": templateInvalid, // parameter count mismatch
  "132001": templateInvalid, // template does not exist (name/language)
  "132005": templateInvalid, // translated text too long
  "132007": templateInvalid, // template format character policy violated
  "132012": templateInvalid, // parameter format mismatch
  "132015": templateInvalid, // template paused
  "132016": templateInvalid, // template disabled
  // --- media
  "131052": mediaInvalid, // WA: media download error (URL unreachable)
  "131053": mediaInvalid, // WA: media upload error (unsupported type / too large)
  // --- policy / account
  "131049": rejected, // WA: not delivered to keep a healthy ecosystem (marketing); Meta says do not retry at once
  "131050": rejected, // WA: user stopped marketing messages
  "131051": rejected, // WA: unsupported message type
  "131031": accountBroken, // WA: business account locked
  "131042": accountBroken, // WA: business eligibility / payment issue
  "133010": accountBroken, // WA: phone number not registered on Cloud API
  "100": rejected, // invalid parameter
  // --- transient
  "1": transient, // unknown error (Meta: retry later)
  "2": transient, // temporary service issue
  "131000": transient, // WA: something went wrong
  "131016": transient, // WA: service unavailable
  "133004": transient, // WA: server temporarily unavailable
};

/** The rule for a Graph code/subcode pair, or undefined when the table does not know it. */
export function graphErrorRule({ code, subcode }: { code?: number; subcode?: number }): GraphErrorRule | undefined {
  if (code === undefined) return undefined;
  if (subcode !== undefined) {
    const specific = GRAPH_ERROR_RULES[`${code}/${subcode}`];
    if (specific) return specific;
  }
  return GRAPH_ERROR_RULES[String(code)];
}

export function providerCode({ code, subcode }: { code?: number; subcode?: number }): string | undefined {
  if (code === undefined) return undefined;
  return subcode === undefined ? String(code) : `${code}/${subcode}`;
}

/** Reads Graph's error object out of any JSON body; undefined when the body is not a Graph error. */
export function parseGraphError(body: unknown): GraphError | undefined {
  if (!body || typeof body !== "object") return undefined;
  const error = (body as { error?: unknown }).error;
  if (!error || typeof error !== "object") return undefined;
  const e = error as Record<string, unknown>;
  const asNumber = (v: unknown) => (typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v) ? Number(v) : undefined);
  return {
    message: typeof e.message === "string" ? e.message : "Graph API error",
    type: typeof e.type === "string" ? e.type : undefined,
    code: asNumber(e.code),
    error_subcode: asNumber(e.error_subcode),
    error_data: e.error_data,
    error_user_title: typeof e.error_user_title === "string" ? e.error_user_title : undefined,
    error_user_msg: typeof e.error_user_msg === "string" ? e.error_user_msg : undefined,
    is_transient: typeof e.is_transient === "boolean" ? e.is_transient : undefined,
    fbtrace_id: typeof e.fbtrace_id === "string" ? e.fbtrace_id : undefined,
  };
}

function errorText(error: GraphError): string {
  const details =
    error.error_data && typeof error.error_data === "object" && typeof (error.error_data as { details?: unknown }).details === "string"
      ? (error.error_data as { details: string }).details
      : undefined;
  return details && !error.message.includes(details) ? `${error.message}: ${details}` : error.message;
}

/** Fallback when the code is unknown: Graph's own transient flag, then the HTTP status. */
function ruleFromStatus(status: number): GraphErrorRule {
  if (status === 429) return rateLimited;
  if (status >= 500) return transient;
  if (status === 401) return { reason: "AUTH_FAILED", retry: false, accountStatus: "auth_failed" };
  return rejected;
}

/** Maps a non-2xx Graph answer (status, parsed body, headers) to a SendFailure. */
export function failureFromGraphResponse({ status, body, headers, now }: { status: number; body: unknown; headers: Headers; now: Date }): SendFailure {
  const error = parseGraphError(body);
  const retryAfterMs = parseRetryAfter({ header: headers.get("retry-after"), now });
  if (!error) {
    const rule = ruleFromStatus(status);
    return {
      ok: false,
      retry: rule.retry,
      reason: rule.reason,
      providerCode: `http_${status}`,
      message: `Graph API answered HTTP ${status}`,
      retryAfterMs,
      ...(rule.accountStatus ? { accountStatus: rule.accountStatus } : {}),
    };
  }
  const known = graphErrorRule({ code: error.code, subcode: error.error_subcode });
  const rule = known ?? (error.is_transient ? transient : ruleFromStatus(status));
  return {
    ok: false,
    retry: rule.retry,
    reason: rule.reason,
    providerCode: providerCode({ code: error.code, subcode: error.error_subcode }),
    message: errorText(error),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...(rule.accountStatus ? { accountStatus: rule.accountStatus } : {}),
  };
}

/** A request that never got an HTTP answer (connection refused/reset, DNS, timeout). */
export function failureFromNetworkError(error: unknown): SendFailure {
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "network", message: `Graph API unreachable: ${message}` };
}

/** WhatsApp status-webhook `errors[]` entry → the error of a `failed` status event. */
export function failureFromWebhookError(error: { code?: number; title?: string; message?: string; error_data?: { details?: string } }): {
  reason: FailureReason;
  providerCode?: string;
  message: string;
} {
  const rule = graphErrorRule({ code: error.code }) ?? rejected;
  const text = [error.title ?? error.message ?? "failed", error.error_data?.details].filter(Boolean).join(": ");
  return { reason: rule.reason, providerCode: providerCode({ code: error.code }), message: text };
}

/**
 * Thrown by calls that have no SendResult to carry a failure (template sync): the mapped failure rides
 * along so the caller can still see `accountStatus` (e.g. a 190 during sync means the token is dead).
 */
export class GraphRequestError extends Error {
  constructor(readonly failure: SendFailure) {
    super(`${failure.reason}: ${failure.message}${failure.providerCode ? ` (${failure.providerCode})` : ""}`);
    this.name = "GraphRequestError";
  }
}
