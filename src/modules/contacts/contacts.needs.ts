/** What the contacts module's routes need from the app (the services take the narrower WriteDeps and MergeDeps). */
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { Queue } from "../../jobs";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";

export type ContactsNeeds = {
  db: Db;
  events: EventBus;
  now: () => Date;
  queue: Pick<Queue, "enqueueJob">;
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "storage">;
};
