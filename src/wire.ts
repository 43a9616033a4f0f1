/**
 * Background wiring of every module: job handlers, event subscribers and recurring schedules. Called once
 * per process by `serve` and by the test harness (so queue.drain() in tests runs the real handlers).
 * Modules add one line each here.
 */
import type { Deps } from "./deps";
import { wireCampaigns } from "./modules/campaigns/campaigns.wire";
import { registerImportJob } from "./modules/contacts/contact-imports.service";
import { wireWebhooks } from "./modules/webhooks/webhooks.wire";
import { syncAllTemplates, wireMessaging } from "./modules/messages/messages.wire";
import { wirePipeline } from "./modules/pipeline/pipeline.wire";
import { wireSources } from "./modules/sources/sources.wire";
import { startSocial, wireSocial } from "./modules/social/social.wire";
import { wireTemplates } from "./modules/templates/templates.wire";

export async function wireModules(deps: Deps): Promise<void> {
  // Platform housekeeping.
  deps.scheduler.every("idempotency-sweep", "0 */10 * * * *", () => deps.idempotency.sweep());
  registerImportJob(deps);
  deps.scheduler.every("api-key-usage-flush", "*/5 * * * * *", () => deps.keys.flushUsage(), { perInstance: true });
  wireWebhooks(deps);
  await wireMessaging(deps);
  wireCampaigns(deps);
  wirePipeline(deps);
  wireSources(deps);
  wireSocial(deps);
  wireTemplates(deps);
}

/** Starts what runs beside the HTTP server once it listens (channel receivers, ...). */
export async function startModules(deps: Deps): Promise<void> {
  await deps.channels.start();
  // Long polling and IMAP run on one instance at a time: the leader (on SQLite, this one).
  deps.leader.onChange((leading) => void (leading ? deps.channels.startPolling() : deps.channels.stopPolling()));
  void syncAllTemplates(deps);
  startSocial(deps);
}

/** Stops it again on shutdown, before the job loop is drained. */
export async function stopModules(deps: Deps): Promise<void> {
  await deps.channels.stop();
}
