/** Background wiring of webhooks: the event subscriber, the delivery job handler and retention. */
import type { WebhooksNeeds } from "./webhooks.needs";
import { DELIVER_JOB, FANOUT_JOB } from "./webhooks.delivery";
import type { Webhooks } from "./webhooks.service";

/** Settled deliveries (and their attempts and bodies) are kept this long. */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3_600_000;

export function wireWebhooks(deps: WebhooksNeeds, w: Webhooks): void {
  deps.events.subscribe(w.engine.onEvent);
  deps.queue.register(FANOUT_JOB, { inline: (job) => w.engine.fanOut(job), maxAttempts: 50 });
  deps.queue.register(DELIVER_JOB, {
    handle: w.engine.handle,
    concurrency: deps.config.webhooks.concurrency,
    groupConcurrency: deps.config.webhooks.concurrency_per_endpoint,
    // The retry schedule is the handler's ({retryAt}); these only cover unexpected throws (e.g. a busy database).
    maxAttempts: 50,
  });
  deps.scheduler.every("webhook-retention", "0 17 3 * * *", () => w.repo.sweep(deps.now().getTime() - DELIVERY_RETENTION_MS));
}
