/** The conversations module of one app: its routes. */
import type { ConversationsNeeds } from "./conversations.needs";
import { conversationsRoutes } from "./conversations.routes";

export function createConversationsModule(needs: ConversationsNeeds) {
  return { routes: conversationsRoutes(needs) };
}
