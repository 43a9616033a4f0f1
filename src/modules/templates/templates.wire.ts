/**
 * Background wiring of templates: the sandbox's review job (DESIGN §17). Provider template sync is wired with
 * messaging (messages.wire.ts: on start, every 30 minutes, `switchboard templates sync`).
 */
import type { TemplatesNeeds } from "./templates.needs";
import { SANDBOX_REVIEW_JOB, sandboxReview } from "./templates.review";

export function wireTemplates(deps: TemplatesNeeds): void {
  // Inline: the verdict only writes (the row and its event), so it commits with the job's own removal.
  deps.queue.register(SANDBOX_REVIEW_JOB, {
    inline: async (job) => {
      await sandboxReview(deps, job.payload.templateId);
    },
  });
}
