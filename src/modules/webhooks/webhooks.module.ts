/**
 * The webhooks module of one app: one service (webhooks.service.ts) whose subscription cache its routes and its
 * wiring (the event subscriber, delivery jobs, retention) share.
 */
import type { WebhooksNeeds } from "./webhooks.needs";
import { webhooksRoutes } from "./webhooks.routes";
import { createWebhooks } from "./webhooks.service";
import { wireWebhooks } from "./webhooks.wire";

export function createWebhooksModule(needs: WebhooksNeeds) {
  const webhooks = createWebhooks(needs);
  return {
    routes: webhooksRoutes(needs, webhooks),
    wire: () => wireWebhooks(needs, webhooks),
  };
}
