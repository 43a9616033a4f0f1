/**
 * Messenger webhook (`object:"page"`) → InboundEvents: messages and postbacks (echoes ignored), `delivery`
 * and `read` as watermarks, referrals kept. Timestamps are epoch milliseconds.
 */
import type { AdapterContext, InboundEvent } from "../channel.types";
import { parseMessagingWebhook } from "../meta/meta.messaging.inbound";

export async function parseMessengerWebhook({
  payload,
  pageId,
  ctx,
}: {
  payload: unknown;
  pageId: string;
  ctx: Pick<AdapterContext, "state" | "log">;
}): Promise<InboundEvent[]> {
  return await parseMessagingWebhook({ payload, options: { object: "page", accountId: pageId, deliveryReceipts: true, state: ctx.state, log: ctx.log } });
}
