/** What the segments module needs from the app. */
import type { Logger } from "../../platform/logger";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { ChannelAccountsNeeds } from "../channels-api/channels.needs";

/** The service (also called by campaigns): a filter is resolved against the clock and the company's accounts. */
export type SegmentsServiceNeeds = ChannelAccountsNeeds & { now: () => Date; log: Pick<Logger, "warn"> };

export type SegmentsNeeds = SegmentsServiceNeeds & { guard: ReturnType<typeof apiGuardPlugin> };
