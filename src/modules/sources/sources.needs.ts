/** What the sources module needs from the app. */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { EventBus } from "../../events";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { LicenseChecker } from "../../platform/license/license";
import type { ChannelAccountsNeeds } from "../channels-api/channels.needs";

/** The service: links are made for the company's accounts; attribution is an event. */
export type SourcesServiceNeeds = ChannelAccountsNeeds & {
  events: EventBus;
  now: () => Date;
  channels: Pick<ChannelRuntime, "get">;
};

export type SourcesNeeds = SourcesServiceNeeds & {
  guard: ReturnType<typeof apiGuardPlugin>;
  license: Pick<LicenseChecker, "check">;
};
