/** Background wiring of campaigns: the run job and the message.* subscriber. One instance per app (its needs object). */
import type { CampaignsNeeds } from "./campaigns.needs";
import { createCampaignEngine, STATUS_STEP_EVENTS } from "./campaigns.engine";
import { createCampaigns, RUN_JOB } from "./campaigns.service";

const instances = new WeakMap<CampaignsNeeds, ReturnType<typeof build>>();

function build(deps: CampaignsNeeds) {
  const campaigns = createCampaigns(deps);
  return { campaigns, engine: createCampaignEngine({ deps, campaigns }) };
}

/** The campaigns module of this app (created on first use), shared by its routes and its wiring. */
export function campaignsFor(deps: CampaignsNeeds) {
  let m = instances.get(deps);
  if (!m) instances.set(deps, (m = build(deps)));
  return m;
}

export function wireCampaigns(deps: CampaignsNeeds): void {
  const { engine } = campaignsFor(deps);
  deps.events.on("message.received", engine.onReceived);
  deps.events.on(STATUS_STEP_EVENTS, engine.onStatusStep);
  // One run at a time per campaign (group = campaign id); campaigns of different companies run side by side.
  deps.queue.register(RUN_JOB, { handle: engine.run, concurrency: 8, groupConcurrency: 1, maxAttempts: 1000 });
}
