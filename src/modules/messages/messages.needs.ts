/**
 * What the messages module needs from the app: sending (accounts, throttle, ledger, queue), the inbound and
 * status paths (channels' callbacks, events), its jobs and schedules, and the unsubscribe links it puts in mail.
 */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { Metrics } from "../../platform/http/metrics";
import type { Logger } from "../../platform/logger";
import type { OutboundPolicy } from "../../platform/outbound/outbound.policy";
import type { Scheduler } from "../../platform/scheduler";
import type { Throttle } from "../../platform/throttle";
import type { PricesNeeds } from "../billing/billing.needs";
import type { Ledger } from "../billing/ledger.service";
import type { UnsubscribeLinks } from "../unsubscribe/unsubscribe.service";

export type MessagesNeeds = PricesNeeds & {
  db: Db;
  events: EventBus;
  now: () => Date;
  log: Logger;
  queue: Pick<Queue, "enqueueJob" | "register" | "listJobs">;
  scheduler: Pick<Scheduler, "every">;
  channels: Pick<ChannelRuntime, "forCompany" | "get" | "all" | "onInbound" | "setStatus">;
  ledger: Pick<Ledger, "debit" | "refund">;
  throttle: Pick<Throttle, "reserveSlot">;
  metrics: Pick<Metrics, "count" | "observe">;
  outbound: OutboundPolicy;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "jobs">;
};

/**
 * The wiring's and the dispatch's: also the unsubscribe links the dispatch puts in mail (the unsubscribe module's
 * `load`, handed in by src/assembly.ts; its secret is read, or claimed, from the database first).
 */
export type MessagesWireNeeds = MessagesNeeds & { unsubscribeLinks: () => Promise<UnsubscribeLinks> };
