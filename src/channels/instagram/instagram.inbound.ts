/**
 * Instagram messaging webhook (`object:"instagram"`) → InboundEvents: messages (echoes ignored),
 * `messaging_seen` as a read watermark; Instagram sends no delivery receipts.
 */
import type { AdapterContext, InboundEvent } from "../channel.types";
import { parseMessagingWebhook } from "../meta/meta.messaging.inbound";

export async function parseInstagramWebhook({ payload, ctx }: { payload: unknown; ctx: Pick<AdapterContext, "state" | "log"> }): Promise<InboundEvent[]> {
  // NB! No filter on entry.id: with Instagram Login the webhook's entry id is the professional account's
  // user_id, which is not always the id an operator copies into ig_user_id. Dropping a real customer
  // message over an id mismatch is worse than the (one app, several IG accounts) cross-delivery case.
  return await parseMessagingWebhook({ payload, options: { object: "instagram", deliveryReceipts: false, state: ctx.state, log: ctx.log } });
}
