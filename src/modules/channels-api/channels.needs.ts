/** What the channels-api module needs from the app. */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";

/** The company's channel accounts (`accountsOf`), which other modules call too. */
export type ChannelAccountsNeeds = { db: Db; channels: Pick<ChannelRuntime, "forCompany"> };

export type ChannelsApiNeeds = ChannelAccountsNeeds & {
  now: () => Date;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "server">;
};
