/** The system module of one app: health, readiness, metrics and the docs bundle, outside the API prefix. */
import type { SystemNeeds } from "./system.needs";
import { systemRoutes } from "./system.routes";

export function createSystemModule(needs: SystemNeeds) {
  return { routes: systemRoutes(needs) };
}
