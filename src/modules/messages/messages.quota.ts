/**
 * Per-account send quotas counted from our own sends: the daily DM limit (X `daily_dm_limit`), reported to the
 * campaigns and enforced on POST /messages (429 RATE_LIMITED with Retry-After).
 */
import { CHANNEL_RULES } from "../../channels/channel.rules";
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { MessagesNeeds } from "./messages.needs";
import { AppError } from "../../platform/errors";
import { messagesStore } from "./messages.repository";

/**
 * The account's daily DM quota (X `daily_dm_limit`), counted over the current UTC day from our own sends;
 * null when the channel or account has none.
 */
export async function dailyDmQuota(
  deps: Pick<MessagesNeeds, "db" | "now">,
  runtime: AccountRuntime,
): Promise<{ limit: number; used: number; resetsAt: Date } | null> {
  if (!CHANNEL_RULES[runtime.account.channel].dailyDmLimit) return null;
  const limit = Number(runtime.account.settings.daily_dm_limit ?? 0);
  if (!(limit > 0)) return null;
  const now = deps.now();
  const dayStart = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const used = await messagesStore(deps.db).countOutboundSince(runtime.account.id, new Date(dayStart));
  return { limit, used, resetsAt: new Date(dayStart + 86_400_000) };
}

export async function checkDailyLimit(deps: MessagesNeeds, runtime: AccountRuntime): Promise<void> {
  const quota = await dailyDmQuota(deps, runtime);
  if (quota && quota.used >= quota.limit) {
    const retryAfter = Math.ceil((quota.resetsAt.getTime() - deps.now().getTime()) / 1000);
    throw new AppError("RATE_LIMITED", `The daily DM limit of ${quota.limit} for this account is reached; it resets at 00:00 UTC`, [], {
      "retry-after": String(retryAfter),
    });
  }
}
