/** The me module of one app: `GET /me`. */
import type { MeNeeds } from "./me.needs";
import { meRoutes } from "./me.routes";

export function createMeModule(needs: MeNeeds) {
  return { routes: meRoutes(needs) };
}
