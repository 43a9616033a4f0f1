/** What the conversations module needs from the app. */
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";

export type ConversationsNeeds = {
  db: Db;
  events: EventBus;
  now: () => Date;
  guard: ReturnType<typeof apiGuardPlugin>;
};
