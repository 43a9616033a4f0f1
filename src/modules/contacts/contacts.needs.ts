/**
 * What the contacts module needs from the app: its routes and the import job (the services take the narrower
 * WriteDeps and MergeDeps).
 */
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { Logger } from "../../platform/logger";

export type ContactsNeeds = {
  db: Db;
  events: EventBus;
  now: () => Date;
  queue: Pick<Queue, "enqueueJob" | "register">;
  log: Pick<Logger, "warn">;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "storage">;
};
