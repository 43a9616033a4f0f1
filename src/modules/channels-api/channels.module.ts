/** The channels API module of one app: `GET /channels` (the company's channel accounts and their health). */
import type { ChannelsApiNeeds } from "./channels.needs";
import { channelsRoutes } from "./channels.routes";

export function createChannelsModule(needs: ChannelsApiNeeds) {
  return { routes: channelsRoutes(needs) };
}
