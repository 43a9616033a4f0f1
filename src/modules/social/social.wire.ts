/** Background wiring of social: the publish job handler and the analytics pull. */
import type { SocialNeeds } from "./social.needs";
import { METRICS_JOB } from "./social.analytics";
import type { Social } from "./social.build";
import { PUBLISH_MAX_ATTEMPTS } from "./social.publish";
import { PUBLISH_JOB } from "./social.service";

/** How often analytics are pulled (cron with seconds). */
export const ANALYTICS_PATTERN = "0 */15 * * * *";

export function wireSocial(deps: SocialNeeds, s: Social): void {
  deps.queue.register(PUBLISH_JOB, {
    handle: s.engine.handle,
    concurrency: 8,
    // One post at a time per account: platforms rate-limit per account, and Instagram's 24 h publishing
    // limit is checked before each post.
    groupConcurrency: 1,
    maxAttempts: PUBLISH_MAX_ATTEMPTS,
  });
  deps.queue.register(METRICS_JOB, {
    handle: s.analytics.handlePull,
    concurrency: 2,
    // One pull at a time per account: the platforms rate-limit per account.
    groupConcurrency: 1,
    // A failed pull marks the account and does not throw; the quarter-hourly pull catches up.
    maxAttempts: 3,
  });
  deps.scheduler.every("social-analytics", ANALYTICS_PATTERN, () => s.analytics.syncAll());
  deps.scheduler.every("social-dead-jobs", "30 * * * * *", async () =>
    s.engine.failDeadJobs(await deps.queue.listJobs({ dead: true, type: PUBLISH_JOB, limit: 200 })),
  );
}

/** At start-up: a first pull, so analytics have data before the first quarter hour. */
export function startSocial(s: Social): void {
  void s.analytics.syncAll();
}
