/** The inbound module of one app: the providers' hooks (`/hooks/{channelAccountId}`, outside the API prefix). */
import type { InboundNeeds } from "./inbound.needs";
import { hooksRoutes } from "./hooks.routes";

export function createInboundModule(needs: InboundNeeds) {
  return { routes: hooksRoutes(needs) };
}
