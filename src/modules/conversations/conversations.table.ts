import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Inbox conversations: at most one open conversation per (contact, channel account). */
export const conversations = sqliteTable(
  "conversations",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    contactId: text("contact_id").notNull(),
    channel: text("channel").notNull(),
    channelAccountId: text("channel_account_id").notNull(),
    /** open | closed */
    status: text("status").notNull(),
    assigneeId: text("assignee_id"),
    assigneeName: text("assignee_name"),
    lastMessageAt: integer("last_message_at", { mode: "timestamp_ms" }),
    lastMessageId: text("last_message_id"),
    closedAt: integer("closed_at", { mode: "timestamp_ms" }),
    /** Inbound messages since an agent last replied or marked the conversation read. */
    unreadCount: integer("unread_count").notNull().default(0),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    uniqueIndex("conversations_one_open_uq").on(t.contactId, t.channelAccountId).where(sql`status = 'open'`),
    index("conversations_company_idx").on(t.companyId, t.id),
    // A contact's conversations (source statistics).
    index("conversations_contact_idx").on(t.contactId),
    // GET /conversations?unread=true and the unread-first order: the company's unread conversations alone,
    // so the inbox's first page does not walk the read ones. A conversation enters it at its first unread
    // message and leaves when read (its count changing meanwhile rewrites nothing here).
    index("conversations_unread_idx").on(t.companyId, t.id).where(sql`unread_count > 0`),
  ],
);

export const conversationNotes = sqliteTable(
  "conversation_notes",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    conversationId: text("conversation_id").notNull(),
    text: text("text").notNull(),
    author: text("author"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("conversation_notes_conv_idx").on(t.conversationId, t.id)],
);

/**
 * What a channel account knows of a contact, independent of conversations opening and closing: the
 * provider timestamp of the contact's last inbound message (the messaging window opens there) and the
 * provider's conversation reference (TikTok conversation_id) used to address replies.
 */
export const contactChannelState = sqliteTable(
  "contact_channel_state",
  {
    contactId: text("contact_id").notNull(),
    channelAccountId: text("channel_account_id").notNull(),
    companyId: text("company_id").notNull(),
    lastInboundAt: integer("last_inbound_at", { mode: "timestamp_ms" }),
    conversationRef: text("conversation_ref"),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.contactId, t.channelAccountId] })],
);
