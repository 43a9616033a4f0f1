/** Background wiring of the pipeline: the task reminder job and the contact.deleted subscriber. */
import type { Deps } from "../../deps";
import { createPipelineService, TASK_REMINDER_JOB } from "./pipeline.service";

export function wirePipeline(deps: Deps): void {
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
  // fails with it); it writes only rows. NB! A promise only for that event: another event's emitter may still
  // run a synchronous transaction, which refuses a subscriber's promise.
  deps.events.subscribe((event) => {
    if (event.type !== "contact.deleted") return undefined;
    const contact = (event.data as { contact?: { id?: string } }).contact;
    return contact?.id ? p.onContactDeleted({ companyId: event.companyId, contactId: contact.id }).then(() => {}) : undefined;
  });
}
