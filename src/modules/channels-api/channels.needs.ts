/** What the channels-api module needs from the app. */
import type { ChannelRuntime } from "../../channels/channel.accounts";
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";

/** What `accountsOf` (which other modules call too) needs: the database (a company's slug) and the configured accounts. */
export type ChannelAccountsNeeds = { db: Db; channels: Pick<ChannelRuntime, "forCompany"> };

export type ChannelsApiNeeds = ChannelAccountsNeeds & {
  now: () => Date;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "server">;
};
