/**
 * The app's jobs: every job type with the type of its payload (JobMap), and the queue typed by it. `enqueueJob`
 * and `register` of a type not listed here, or with a wrong payload, do not compile; a handler gets its job's
 * payload typed. A new job type is one entry here (its name is the constant its module exports).
 *
 * Why here, at the top beside events.ts and wire.ts: the payloads are the features' types, and the platform's
 * queue imports no module; it is generic over a map, this file gives it the app's. Modules import only types
 * from here (erased at run time: no import cycle).
 *
 * NB! A type's name is stored in every jobs row (and its payload as JSON): renaming one, or changing a payload
 * incompatibly, strands the rows already queued by a running installation.
 */
import type { ReportEvent } from "./channels/channel.types";
import type { Queue as PlatformQueue } from "./platform/queue/queue.types";

// The payloads of more than one field, named here (the modules that enqueue and handle them import them from
// here: this file imports no module, so the map and its users do not import each other).
/** Reports to apply, by when they fall due (ms). */
export type ScheduledReports = { at: number; events: ReportEvent[] }[];
/** A fan-out job: the event's stored webhook message (`messageId`: the event's id) and its endpoints. */
export type FanOutPayload = { messageId: string; companyId: string; type: string; endpointIds: string[] };
/** A pull of one account. `after` (ms): a post became due then; a pull since then already covered it. */
export interface MetricsPullPayload {
  accountId: string;
  after?: number;
}
/** One target of a social post; `token`: the publish attempt it belongs to. */
export interface PublishPayload {
  targetId: string;
  token: string;
}

/** Job type → its payload. */
export type JobMap = {
  /** A one-to-one message's send (messages: DISPATCH_JOBS.direct). */
  "message.dispatch": { messageId: string };
  /** A campaign message's send (DISPATCH_JOBS.bulk). */
  "message.dispatch.bulk": { messageId: string };
  /** A scheduled message falls due (messages.scheduled). */
  "message.scheduled": { messageId: string };
  /** Delivery reports to apply later: the sandbox's, and a provider's that came before its send committed. */
  "channel.inbound.scheduled": { accountId: string; schedule: ScheduledReports };
  "campaign.run": { campaignId: string };
  "contacts.import": { importId: string };
  "templates.sandbox_review": { templateId: string };
  /** `remindAt` (ms): the reminder this job was enqueued for (a changed remindAt leaves it stale). */
  "pipeline.task-reminder": { taskId: string; remindAt: number };
  "social.publish": PublishPayload;
  "social.metrics": MetricsPullPayload;
  /** One event's webhook message → a delivery per subscribed endpoint. */
  "webhook.fanout": FanOutPayload;
  /** `manual`: a redelivery asked for by POST /webhooks/{id}/deliveries/{deliveryId}/redeliver. */
  "webhook.deliver": { deliveryId: string; manual?: boolean };
};

export type JobType = keyof JobMap;
/** The app's job queue. */
export type Queue = PlatformQueue<JobMap>;
