/**
 * What the system routes (health, readiness, metrics) need from the app. /metrics reports the campaigns' progress
 * through the campaigns module's service, handed in by src/assembly.ts.
 */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { Queue } from "../../jobs";
import type { Metrics } from "../../platform/http/metrics";
import type { Ledger } from "../billing/ledger.service";
import type { Campaigns } from "../campaigns/campaigns.service";

export type SystemNeeds = {
  db: Db;
  now: () => Date;
  queue: Pick<Queue, "stats" | "oldestDueAgeMs">;
  ledger: Pick<Ledger, "balance">;
  metrics: Pick<Metrics, "render">;
  channels: Pick<ChannelRuntime, "all">;
  startedAt: Date;
  /** Whole: the database's file is databasePath(config) (config.schema.ts). */
  config: Config;
  campaigns: Pick<Campaigns, "activeProgress">;
};
