/** What the templates module needs from the app. */
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { Logger } from "../../platform/logger";
import type { ChannelAccountsNeeds } from "../channels-api/channels.needs";

/** The sandbox's review of a template (templates.review). */
export type ReviewNeeds = { db: Db; events: EventBus; now: () => Date; log: Pick<Logger, "info"> };

/** Creating and deleting templates (templates.service). */
export type TemplateServiceNeeds = ChannelAccountsNeeds & ReviewNeeds & { queue: Pick<Queue, "enqueueJob"> };

export type TemplatesNeeds = TemplateServiceNeeds & {
  guard: ReturnType<typeof apiGuardPlugin>;
  queue: Pick<Queue, "register">;
};
