/** What the media module needs from the app. */
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { ChannelsView } from "./media.channels";

export type MediaNeeds = {
  db: Db;
  now: () => Date;
  guard: ReturnType<typeof apiGuardPlugin>;
  channels: ChannelsView;
  config: Pick<Config, "server" | "storage">;
};
