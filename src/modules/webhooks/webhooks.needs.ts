/** What the webhooks module needs from the app: the delivery engine's queue, bus, fetch and metrics, and `[webhooks]`. */
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { Metrics } from "../../platform/http/metrics";
import type { Logger } from "../../platform/logger";
import type { Scheduler } from "../../platform/scheduler";

export type WebhooksNeeds = {
  db: Db;
  now: () => Date;
  queue: Queue;
  events: EventBus;
  fetch: typeof fetch;
  log: Logger;
  metrics: Metrics;
  scheduler: Pick<Scheduler, "every">;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "webhooks">;
};
