/**
 * The campaigns module of one app: the service (rules and store) shared by its routes, its run engine and the
 * system routes' /metrics; the wiring registers the run job and the message.* subscribers.
 */
import type { CampaignsNeeds } from "./campaigns.needs";
import { createCampaignEngine } from "./campaigns.engine";
import { campaignsRoutes } from "./campaigns.routes";
import { createCampaigns } from "./campaigns.service";
import { wireCampaigns } from "./campaigns.wire";

export function createCampaignsModule(needs: CampaignsNeeds) {
  const campaigns = createCampaigns(needs);
  const engine = createCampaignEngine({ deps: needs, campaigns });
  return {
    routes: campaignsRoutes(needs, campaigns),
    wire: () => wireCampaigns(needs, engine),
    service: campaigns,
    /** The run engine (the tests drive it a page or a batch at a time). */
    engine,
  };
}
