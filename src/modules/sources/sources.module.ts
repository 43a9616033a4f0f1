/** The sources module of one app: its routes and its wiring (first-touch attribution from inbound messages). */
import type { SourcesNeeds } from "./sources.needs";
import { sourcesRoutes } from "./sources.routes";
import { wireSources } from "./sources.wire";

export function createSourcesModule(needs: SourcesNeeds) {
  return { routes: sourcesRoutes(needs), wire: () => wireSources(needs) };
}
