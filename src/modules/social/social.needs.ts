/** What the social module needs from the app: the social accounts' runtime, its jobs and schedules, and config. */
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { Logger } from "../../platform/logger";
import type { OutboundPolicy } from "../../platform/outbound/outbound.policy";
import type { Scheduler } from "../../platform/scheduler";
import type { SocialRuntime } from "./social.accounts";

export type SocialNeeds = {
  db: Db;
  now: () => Date;
  log: Logger;
  events: EventBus;
  queue: Pick<Queue, "enqueueJob" | "register" | "listJobs">;
  scheduler: Pick<Scheduler, "every">;
  social: SocialRuntime;
  outbound: Pick<OutboundPolicy, "staticProblem">;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "server" | "social">;
};
