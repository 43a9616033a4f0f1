/** Background wiring of campaigns: the run job and the message.* subscriber. */
import type { CampaignsNeeds } from "./campaigns.needs";
import { STATUS_STEP_EVENTS, type CampaignEngine } from "./campaigns.engine";
import { RUN_JOB } from "./campaigns.service";

export function wireCampaigns(deps: CampaignsNeeds, engine: CampaignEngine): void {
  deps.events.on("message.received", engine.onReceived);
  deps.events.on(STATUS_STEP_EVENTS, engine.onStatusStep);
  // One run at a time per campaign (group = campaign id); campaigns of different companies run side by side.
  deps.queue.register(RUN_JOB, { handle: engine.run, concurrency: 8, groupConcurrency: 1, maxAttempts: 1000 });
}
