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
import type { ScheduledReports } from "./modules/messages/messages.wire";
import type { FanOutPayload } from "./modules/webhooks/webhooks.delivery";
import type { MetricsPullPayload } from "./modules/social/social.analytics";
import type { PublishPayload } from "./modules/social/social.publish";
import type { Queue as PlatformQueue } from "./platform/queue/queue.types";

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
