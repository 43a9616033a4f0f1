/**
 * Bot API failures → SendResult. Telegram's `description` text is the only thing that tells "blocked"
 * from "deactivated" (both 403), so the mapping matches on it, case-insensitively.
 */
import type { SendResult } from "../channel.types";
import type { TelegramCallResult } from "./telegram.api";

type Failure = Extract<SendResult, { ok: false }>;

export function telegramFailure(result: Exclude<TelegramCallResult<unknown>, { kind: "ok" }>): Failure {
  if (result.kind === "network") {
    const status = result.httpStatus;
    return {
      ok: false,
      retry: true,
      reason: "PROVIDER_UNAVAILABLE",
      providerCode: status ? String(status) : undefined,
      message: `Telegram unreachable: ${result.message}`,
    };
  }
  const { error_code: code, description } = result.error;
  const text = description.toLowerCase();
  const base = { providerCode: String(code), message: description };
  if (code === 429) {
    const retryAfter = result.error.parameters?.retry_after;
    return { ok: false, retry: true, reason: "RATE_LIMITED", retryAfterMs: retryAfter !== undefined ? retryAfter * 1000 : undefined, ...base };
  }
  if (code === 401) return { ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed", ...base };
  if (code >= 500) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", ...base };
  if (code === 403) {
    if (text.includes("blocked by the user")) return { ok: false, retry: false, reason: "USER_BLOCKED", ...base };
    // "user is deactivated" (deleted account), "bot can't initiate conversation with a user", "bot is not a member…"
    return { ok: false, retry: false, reason: "RECIPIENT_INVALID", ...base };
  }
  if (code === 400) {
    if (text.includes("chat not found") || text.includes("user not found") || text.includes("peer_id_invalid")) {
      return { ok: false, retry: false, reason: "RECIPIENT_INVALID", ...base };
    }
    // "wrong file identifier", "failed to get HTTP URL content", "wrong type of the web page content", "file is too big"
    if (/file|url content|web page content|photo|image|dimensions/.test(text)) {
      return { ok: false, retry: false, reason: "MEDIA_INVALID", ...base };
    }
  }
  if (code === 413) return { ok: false, retry: false, reason: "MEDIA_INVALID", ...base };
  return { ok: false, retry: false, reason: "PROVIDER_REJECTED", ...base };
}
