/** The pipeline module of one app: its routes and its wiring (the task reminder job, the contact.deleted subscriber). */
import type { PipelineNeeds } from "./pipeline.needs";
import { pipelineRoutes } from "./pipeline.routes";
import { wirePipeline } from "./pipeline.wire";

export function createPipelineModule(needs: PipelineNeeds) {
  return { routes: pipelineRoutes(needs), wire: () => wirePipeline(needs) };
}
