/** Background wiring of the pipeline: the task reminder job and the contact.deleted subscriber. */
import type { PipelineNeeds } from "./pipeline.needs";
import { createPipelineService, TASK_REMINDER_JOB } from "./pipeline.service";

export function wirePipeline(deps: PipelineNeeds): void {
  const p = createPipelineService({
    db: deps.db,
    events: deps.events,
    queue: deps.queue,
    now: deps.now,
    pipeline: deps.pipeline,
    currency: deps.config.billing.currency,
  });
  // Inline: the claim and task.due commit with the job's own removal (one transaction): fires once.
  deps.queue.register(TASK_REMINDER_JOB, {
    inline: async (job) => {
      await p.fireReminder(job.payload);
    },
  });
  // Runs inside the contact deletion's unit of work (an asynchronous subscriber: the unit awaits it, and
  // fails with it); it writes only rows. NB! A promise only for that event (`on`: other events never reach it):
  // another event's emitter may still run a synchronous transaction, which refuses a subscriber's promise.
  deps.events.on("contact.deleted", (event) => p.onContactDeleted({ companyId: event.companyId, contactId: event.data.contact.id }).then(() => {}));
}
