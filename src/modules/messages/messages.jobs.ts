/**
 * The messages module's job types, names only: dispatch (messages.dispatch.ts), the status reports applied later
 * (messages.reports.ts schedules and runs them) and the sends due later (messages.scheduled.ts).
 * A leaf: every file of the module may import it without an import circle.
 */
import { DISPATCH_JOBS } from "./messages.table";

export const DISPATCH_JOB = DISPATCH_JOBS.direct;
/** Dispatch of campaign messages: the same handler, its own workers (DESIGN §10: one-to-one sends are never starved). */
export const BULK_DISPATCH_JOB = DISPATCH_JOBS.bulk;
/** Status reports applied later (messages.reports.ts wireReports): the sandbox's scheduled delivered/read, and provider reports that overtook our commit of the send. */
export const SCHEDULED_INBOUND_JOB = "channel.inbound.scheduled";
/** A message sent later falls due (messages.scheduled.ts): eligibility again, then its dispatch job — or failed and refunded. */
export const SCHEDULED_SEND_JOB = "message.scheduled";
