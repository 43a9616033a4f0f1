/** The templates module of one app: its routes and its wiring (the sandbox's review job). */
import type { TemplatesNeeds } from "./templates.needs";
import { templatesRoutes } from "./templates.routes";
import { wireTemplates } from "./templates.wire";

export function createTemplatesModule(needs: TemplatesNeeds) {
  return { routes: templatesRoutes(needs), wire: () => wireTemplates(needs) };
}
