/**
 * What the system routes (health, readiness, metrics) need from the app. /metrics reports the campaigns' progress
 * (campaignsFor), so it needs what the campaigns module needs.
 */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { Config } from "../../config/config.schema";
import type { Queue } from "../../jobs";
import type { Metrics } from "../../platform/http/metrics";
import type { CampaignsNeeds } from "../campaigns/campaigns.needs";

export type SystemNeeds = CampaignsNeeds & {
  queue: Pick<Queue, "stats" | "oldestDueAgeMs">;
  metrics: Pick<Metrics, "render">;
  channels: Pick<ChannelRuntime, "all">;
  startedAt: Date;
  /** Whole: the database's file is databasePath(config) (config.schema.ts). */
  config: Config;
};
