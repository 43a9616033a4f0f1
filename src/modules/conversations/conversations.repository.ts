/**
 * The conversations store: every read and write of the conversations, conversation_notes and
 * contact_channel_state tables. Callers hold the transaction; nothing here opens one.
 */
import { and, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { greatestFn, jsonValues, perEngine } from "../../db/dialect";
import { insertRow, mapRow, updateRow } from "../../db/rows";
import { contactChannelState, conversationNotes, conversations } from "./conversations.table";
import { perConnection } from "../../db/per-connection";

export type ConversationRow = typeof conversations.$inferSelect;
export type NoteRow = typeof conversationNotes.$inferSelect;
export type ConversationFilter = { status?: string; channel?: string; assigneeId?: string; contactId?: string; unassigned?: boolean; unread?: boolean };

const CONVERSATIONS_OF_CONTACTS = perEngine((e) => `SELECT id FROM conversations WHERE contact_id IN (${jsonValues(e)})`);

export function createConversationsStore(db: Db) {
  const sqlite = db.$client;
  const greatest = sql.raw(greatestFn(db.engine));
  const ofContactsSql = CONVERSATIONS_OF_CONTACTS[db.engine];

  return {
    insertConversation(row: ConversationRow) {
      insertRow(db, conversations, row);
    },
    /** A new message in the conversation: inbound counts one more unread, an agent's reply reads them all. */
    touch(id: string, { at, messageId, unread }: { at: Date; messageId: string; unread: "inbound" | "reply" | null }) {
      // Without a change of the count (a campaign's or an automatic send) the column is not named: SQLite
      // re-evaluates the partial conversations_unread_idx for every UPDATE that sets unread_count, even to itself.
      const count = unread === "inbound" ? ", unread_count = unread_count + 1" : unread === "reply" ? ", unread_count = 0" : "";
      sqlite
        .query(`UPDATE conversations SET last_message_at = ?, last_message_id = ?, updated_at = ?${count} WHERE id = ?`)
        .run(at.getTime(), messageId, at.getTime(), id);
    },
    markRead(id: string, at: Date): boolean {
      return sqlite.query(`UPDATE conversations SET unread_count = 0, updated_at = ? WHERE id = ? AND unread_count > 0`).run(at.getTime(), id).changes > 0;
    },
    updateConversation(id: string, changes: Partial<ConversationRow>) {
      updateRow(db, conversations, id, changes);
    },
    /** (Every send asks: the id alone, not the row.) */
    openConversationId(contactId: string, channelAccountId: string): string | undefined {
      return (
        sqlite.query(`SELECT id FROM conversations WHERE contact_id = ? AND channel_account_id = ? AND status = 'open'`).get(contactId, channelAccountId) as {
          id: string;
        } | null
      )?.id;
    },
    latestOn(contactId: string, channelAccountId: string): ConversationRow | undefined {
      return db
        .select()
        .from(conversations)
        .where(and(eq(conversations.contactId, contactId), eq(conversations.channelAccountId, channelAccountId)))
        .orderBy(desc(conversations.id))
        .limit(1)
        .get();
    },
    ofCompany(companyId: string, id: string): ConversationRow | undefined {
      return db
        .select()
        .from(conversations)
        .where(and(eq(conversations.id, id), eq(conversations.companyId, companyId)))
        .get();
    },
    list({ companyId, filter, limit, before }: { companyId: string; filter: ConversationFilter; limit: number; before?: string }): ConversationRow[] {
      const where: SQL[] = [eq(conversations.companyId, companyId)];
      if (filter.status) where.push(eq(conversations.status, filter.status));
      if (filter.channel) where.push(eq(conversations.channel, filter.channel));
      if (filter.assigneeId) where.push(eq(conversations.assigneeId, filter.assigneeId));
      if (filter.contactId) where.push(eq(conversations.contactId, filter.contactId));
      // Said as the partial index's condition (SQLite uses it only so); `false`: the read ones.
      if (filter.unread === true) where.push(sql`unread_count > 0`);
      if (filter.unread === false) where.push(sql`unread_count = 0`);
      if (before) where.push(lt(conversations.id, before));
      return db
        .select()
        .from(conversations)
        .where(and(...where))
        .orderBy(desc(conversations.id))
        .limit(limit)
        .all();
    },
    setAssignee(id: string, assignee: { id: string; name?: string | null } | null, at: Date) {
      db.update(conversations)
        .set({ assigneeId: assignee?.id ?? null, assigneeName: assignee ? (assignee.name ?? null) : null, updatedAt: at })
        .where(eq(conversations.id, id))
        .run();
    },
    close(id: string, at: Date) {
      db.update(conversations).set({ status: "closed", closedAt: at, updatedAt: at }).where(eq(conversations.id, id)).run();
    },
    reopen(id: string, at: Date) {
      db.update(conversations).set({ status: "open", closedAt: null, updatedAt: at }).where(eq(conversations.id, id)).run();
    },
    /** The open conversation of (contact, account), if any (reopening another one would make two). */
    otherOpen(contactId: string, channelAccountId: string): { id: string } | undefined {
      return db
        .select({ id: conversations.id })
        .from(conversations)
        .where(and(eq(conversations.contactId, contactId), eq(conversations.channelAccountId, channelAccountId), eq(conversations.status, "open")))
        .get();
    },
    touchUpdatedAt(id: string, at: Date) {
      db.update(conversations).set({ updatedAt: at }).where(eq(conversations.id, id)).run();
    },
    /** Ids of the conversations of these contacts (any account, open or closed). */
    idsOfContacts(contactIds: string[]): string[] {
      return (sqlite.query(ofContactsSql).all(JSON.stringify(contactIds)) as { id: string }[]).map((r) => r.id);
    },
    /** Ids of a contact's conversations on one account (open or closed). */
    idsOfContactOn(contactId: string, channelAccountId: string): string[] {
      return (
        sqlite.query(`SELECT id FROM conversations WHERE contact_id = ? AND channel_account_id = ?`).all(contactId, channelAccountId) as { id: string }[]
      ).map((r) => r.id);
    },

    // ---------------------------------------------------------------- notes
    insertNote(note: NoteRow) {
      db.insert(conversationNotes).values(note).run();
    },
    notes(conversationId: string): NoteRow[] {
      return db
        .select()
        .from(conversationNotes)
        .where(eq(conversationNotes.conversationId, conversationId))
        .orderBy(desc(conversationNotes.id))
        .limit(100)
        .all();
    },

    // ---------------------------------------------------------------- channel state
    /** Records an inbound message's provider timestamp (window) and the provider conversation reference. */
    recordInbound({
      companyId,
      contactId,
      channelAccountId,
      timestamp,
      conversationRef,
      at,
    }: {
      companyId: string;
      contactId: string;
      channelAccountId: string;
      timestamp: Date;
      conversationRef?: string;
      at: Date;
    }) {
      db.insert(contactChannelState)
        .values({ contactId, channelAccountId, companyId, lastInboundAt: timestamp, conversationRef: conversationRef ?? null, updatedAt: at })
        .onConflictDoUpdate({
          target: [contactChannelState.contactId, contactChannelState.channelAccountId],
          // Out-of-order webhooks must not move the window backwards.
          set: {
            lastInboundAt: sql`${greatest}(coalesce(${contactChannelState.lastInboundAt}, 0), ${timestamp.getTime()})`,
            conversationRef: conversationRef ? conversationRef : sql`${contactChannelState.conversationRef}`,
            updatedAt: at,
          },
        })
        .run();
    },
    channelState(contactId: string, channelAccountId: string) {
      const raw = sqlite.query(`SELECT * FROM contact_channel_state WHERE contact_id = ? AND channel_account_id = ?`).get(contactId, channelAccountId);
      return mapRow(contactChannelState, raw as Record<string, unknown> | null);
    },
  };
}

export type ConversationsStore = ReturnType<typeof createConversationsStore>;

/** The store of a connection, built once. */
export const conversationsStore = perConnection(createConversationsStore);
