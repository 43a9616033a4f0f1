/**
 * getUpdates long polling (mode = "polling"). The offset lives in the account's state store and is
 * advanced past an update only after `ctx.onInbound` resolved for it, so a crash or restart neither
 * loses an update (it is fetched again) nor repeats a handed-over one (Telegram drops every update
 * below the offset we confirm with the next call).
 */
import type { AdapterContext } from "../channel.types";
import { callTelegram, type TelegramCallResult } from "./telegram.api";
import { callbackQueryIdOf, eventsOfUpdate, TELEGRAM_ALLOWED_UPDATES, type TgUpdate } from "./telegram.inbound";

export const TELEGRAM_OFFSET_KEY = "telegram.update_offset";
/** Seconds Telegram may hold one getUpdates open; stop() aborts it, so a long hold costs nothing. */
const LONG_POLL_SECONDS = 25;
const MAX_BACKOFF_MS = 60_000;

export interface TelegramPoller {
  stop(): Promise<void>;
}

/** Ends the client's spinner on a tapped inline button (a failure is logged: the tap is stored either way). */
export async function answerCallbackQuery(
  ctx: AdapterContext,
  call: <T>(method: string, body: Record<string, unknown>) => Promise<TelegramCallResult<T>>,
  update: unknown,
): Promise<void> {
  const id = callbackQueryIdOf(update);
  if (!id) return;
  const answer = await call<boolean>("answerCallbackQuery", { callback_query_id: id });
  if (answer.kind !== "ok") ctx.log.warn({ accountId: ctx.account.id, answer }, "telegram: answerCallbackQuery failed");
}

export function startTelegramPolling(opts: { ctx: AdapterContext; baseUrl: string; token: string; longPollSeconds?: number }): TelegramPoller {
  const { ctx } = opts;
  const controller = new AbortController();
  const signal = controller.signal;
  const call = <T>(method: string, body: Record<string, unknown>) =>
    callTelegram<T>({ fetch: ctx.fetch, baseUrl: opts.baseUrl, token: opts.token, method, body, signal });

  const loop = async () => {
    let backoffMs = 1000;
    const pause = async (ms: number) => {
      await sleep(ms, signal);
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
    };
    while (!signal.aborted) {
      const stored = await ctx.state.read(TELEGRAM_OFFSET_KEY);
      const body: Record<string, unknown> = { timeout: opts.longPollSeconds ?? LONG_POLL_SECONDS, allowed_updates: TELEGRAM_ALLOWED_UPDATES };
      if (stored) body.offset = Number(stored);
      const answer = await call<TgUpdate[]>("getUpdates", body);
      if (signal.aborted) break;

      if (answer.kind === "ok") {
        backoffMs = 1000;
        let handedOver = true;
        for (const update of answer.result) {
          const events = eventsOfUpdate(update, ctx.log, ctx.now());
          if (events.length > 0) {
            try {
              await ctx.onInbound(events);
            } catch (err) {
              // NB! Do not advance: the same update comes again with the next getUpdates.
              ctx.log.error({ err, updateId: update.update_id, accountId: ctx.account.id }, "telegram: storing an update failed; will retry");
              handedOver = false;
              break;
            }
          }
          await answerCallbackQuery(ctx, call, update);
          await ctx.state.write(TELEGRAM_OFFSET_KEY, String(update.update_id + 1));
        }
        if (!handedOver) await pause(backoffMs);
        continue;
      }

      if (answer.kind === "error") {
        const { error_code: code, description, parameters } = answer.error;
        if (code === 409) {
          // "Conflict: can't use getUpdates method while webhook is active": the account was in webhook mode before.
          ctx.log.warn({ accountId: ctx.account.id, description }, "telegram: removing the webhook to switch to polling");
          await call("deleteWebhook", {});
          continue;
        }
        const waitMs = code === 429 && parameters?.retry_after !== undefined ? parameters.retry_after * 1000 : backoffMs;
        const level = code === 401 ? "error" : "warn";
        ctx.log[level]({ accountId: ctx.account.id, code, description, waitMs }, "telegram: getUpdates failed");
        await pause(waitMs);
        continue;
      }

      ctx.log.warn({ accountId: ctx.account.id, message: answer.message, waitMs: backoffMs }, "telegram: getUpdates unreachable");
      await pause(backoffMs);
    }
  };

  const done = loop().catch((err) => ctx.log.error({ err, accountId: ctx.account.id }, "telegram: polling loop crashed"));
  return {
    async stop() {
      controller.abort();
      await done;
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
