/**
 * The messages module of one app: its routes, its background wiring (dispatch, inbound hand-over, scheduled
 * sends, template sync) and, once the server listens, a first template sync.
 */
import type { MessagesWireNeeds } from "./messages.needs";
import { messagesRoutes } from "./messages.routes";
import { syncAllTemplates, wireMessaging } from "./messages.wire";

export function createMessagesModule(needs: MessagesWireNeeds) {
  return {
    routes: messagesRoutes(needs),
    wire: () => wireMessaging(needs),
    start: () => void syncAllTemplates(needs),
  };
}
