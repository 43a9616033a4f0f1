/**
 * What the campaigns module needs from the app. It calls the messages service (an estimate's price and quota, a
 * run's outbound messages) and the segments service (a filter's context), so it needs what they need of it.
 */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { EventBus } from "../../events";
import type { Ledger } from "../billing/ledger.service";
import type { PricesNeeds } from "../billing/billing.needs";
import type { MessagesNeeds } from "../messages/messages.needs";
import type { SegmentsServiceNeeds } from "../segments/segments.needs";

/** The service and the engine (campaigns.service, campaigns.engine). */
export type CampaignsServiceNeeds = SegmentsServiceNeeds &
  PricesNeeds &
  Pick<MessagesNeeds, "db" | "events" | "now" | "queue" | "ledger"> & {
    ledger: Pick<Ledger, "balance">;
    channels: Pick<ChannelRuntime, "get">;
  };

/** The routes and the wiring (campaigns.routes, campaigns.wire). */
export type CampaignsNeeds = CampaignsServiceNeeds & {
  guard: ReturnType<typeof apiGuardPlugin>;
  events: Pick<EventBus, "on">;
  queue: Pick<Queue, "register">;
};
