/**
 * A conversation as the API shows it (GET /conversations/{id}, the conversation.* events' payload): a leaf, so the
 * service, the routes and the event catalogue (src/events.ts) take it without importing each other.
 */
import type { ConversationRow } from "./conversations.repository";

export function conversationView(c: ConversationRow) {
  return {
    id: c.id,
    status: c.status as "open" | "closed",
    contactId: c.contactId,
    channel: c.channel,
    channelAccountId: c.channelAccountId,
    assignee: c.assigneeId ? { id: c.assigneeId, name: c.assigneeName } : null,
    lastMessageAt: c.lastMessageAt?.toISOString() ?? null,
    closedAt: c.closedAt?.toISOString() ?? null,
    unreadCount: c.unreadCount,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}
