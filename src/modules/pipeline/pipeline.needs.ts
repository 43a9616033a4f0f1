/** What the pipeline module needs from the app: its service's dependencies, the resolved `[pipeline]` and the currency. */
import type { Config } from "../../config/config.schema";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { PipelineServiceDeps } from "./pipeline.service";

export type PipelineNeeds = Omit<PipelineServiceDeps, "currency"> & {
  guard: ReturnType<typeof apiGuardPlugin>;
  config: Pick<Config, "billing">;
};
