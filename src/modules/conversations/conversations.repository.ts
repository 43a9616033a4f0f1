/**
 * The conversations store: every read and write of the conversations, conversation_notes and
 * contact_channel_state tables. Callers hold the transaction; nothing here opens one.
 */
import { and, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { greatestFn, jsonValues, perEngine } from "../../db/dialect";
import { insertInto, mapRow, updateById } from "../../db/rows";
import { contactChannelState, conversationNotes, conversations } from "./conversations.table";
import { perConnection } from "../../db/per-connection";

export type ConversationRow = typeof conversations.$inferSelect;
export type NoteRow = typeof conversationNotes.$inferSelect;
export type ConversationFilter = { status?: string; channel?: string; assigneeId?: string; contactId?: string; unassigned?: boolean; unread?: boolean };

const CHANNEL_STATE = `SELECT * FROM contact_channel_state WHERE contact_id = ? AND channel_account_id = ?`;
const CONVERSATIONS_OF_CONTACTS = perEngine((e) => `SELECT id FROM conversations WHERE contact_id IN (${jsonValues(e)})`);

export function createConversationsStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const greatest = sql.raw(greatestFn(db.engine));
  const ofContactsSql = CONVERSATIONS_OF_CONTACTS[db.engine];

  return {
    async insertConversation(row: ConversationRow): Promise<void> {
      await insertInto(db, conversations, row);
    },
    /** A new message in the conversation: inbound counts one more unread, an agent's reply reads them all. */
    async touch(id: string, { at, messageId, unread }: { at: Date; messageId: string; unread: "inbound" | "reply" | null }): Promise<void> {
      // Without a change of the count (a campaign's or an automatic send) the column is not named: SQLite
      // re-evaluates the partial conversations_unread_idx for every UPDATE that sets unread_count, even to itself.
      const count = unread === "inbound" ? ", unread_count = unread_count + 1" : unread === "reply" ? ", unread_count = 0" : "";
      await db
        .sql(`UPDATE conversations SET last_message_at = ?, last_message_id = ?, updated_at = ?${count} WHERE id = ?`)
        .run(at.getTime(), messageId, at.getTime(), id);
    },
    async markRead(id: string, at: Date): Promise<boolean> {
      return (await db.sql(`UPDATE conversations SET unread_count = 0, updated_at = ? WHERE id = ? AND unread_count > 0`).run(at.getTime(), id)).changes > 0;
    },
    async updateConversation(id: string, changes: Partial<ConversationRow>): Promise<void> {
      await updateById(db, conversations, id, changes);
    },
    /** (Every send asks: the id alone, not the row.) */
    async openConversationId(contactId: string, channelAccountId: string): Promise<string | undefined> {
      const row = (await db
        .sql(`SELECT id FROM conversations WHERE contact_id = ? AND channel_account_id = ? AND status = 'open'`)
        .get(contactId, channelAccountId)) as { id: string } | null;
      return row?.id;
    },
    async latestOn(contactId: string, channelAccountId: string): Promise<ConversationRow | undefined> {
      return await db
        .select()
        .from(conversations)
        .where(and(eq(conversations.contactId, contactId), eq(conversations.channelAccountId, channelAccountId)))
        .orderBy(desc(conversations.id))
        .limit(1)
        .get();
    },
    async ofCompany(companyId: string, id: string): Promise<ConversationRow | undefined> {
      return await db
        .select()
        .from(conversations)
        .where(and(eq(conversations.id, id), eq(conversations.companyId, companyId)))
        .get();
    },
    async list({
      companyId,
      filter,
      limit,
      before,
    }: {
      companyId: string;
      filter: ConversationFilter;
      limit: number;
      before?: string;
    }): Promise<ConversationRow[]> {
      const where: SQL[] = [eq(conversations.companyId, companyId)];
      if (filter.status) where.push(eq(conversations.status, filter.status));
      if (filter.channel) where.push(eq(conversations.channel, filter.channel));
      if (filter.assigneeId) where.push(eq(conversations.assigneeId, filter.assigneeId));
      if (filter.contactId) where.push(eq(conversations.contactId, filter.contactId));
      // Said as the partial index's condition (SQLite uses it only so); `false`: the read ones.
      if (filter.unread === true) where.push(sql`unread_count > 0`);
      if (filter.unread === false) where.push(sql`unread_count = 0`);
      if (before) where.push(lt(conversations.id, before));
      return await db
        .select()
        .from(conversations)
        .where(and(...where))
        .orderBy(desc(conversations.id))
        .limit(limit)
        .all();
    },
    async setAssignee(id: string, assignee: { id: string; name?: string | null } | null, at: Date): Promise<void> {
      await db
        .update(conversations)
        .set({ assigneeId: assignee?.id ?? null, assigneeName: assignee ? (assignee.name ?? null) : null, updatedAt: at })
        .where(eq(conversations.id, id))
        .run();
    },
    async close(id: string, at: Date): Promise<void> {
      await db.update(conversations).set({ status: "closed", closedAt: at, updatedAt: at }).where(eq(conversations.id, id)).run();
    },
    async reopen(id: string, at: Date): Promise<void> {
      await db.update(conversations).set({ status: "open", closedAt: null, updatedAt: at }).where(eq(conversations.id, id)).run();
    },
    /** The open conversation of (contact, account), if any (reopening another one would make two). */
    async otherOpen(contactId: string, channelAccountId: string): Promise<{ id: string } | undefined> {
      return await db
        .select({ id: conversations.id })
        .from(conversations)
        .where(and(eq(conversations.contactId, contactId), eq(conversations.channelAccountId, channelAccountId), eq(conversations.status, "open")))
        .get();
    },
    async touchUpdatedAt(id: string, at: Date): Promise<void> {
      await db.update(conversations).set({ updatedAt: at }).where(eq(conversations.id, id)).run();
    },
    /** Ids of the conversations of these contacts (any account, open or closed). */
    async idsOfContacts(contactIds: string[]): Promise<string[]> {
      return ((await db.sql(ofContactsSql).all(JSON.stringify(contactIds))) as { id: string }[]).map((r) => r.id);
    },
    /** Ids of a contact's conversations on one account (open or closed). */
    async idsOfContactOn(contactId: string, channelAccountId: string): Promise<string[]> {
      const rows = (await db.sql(`SELECT id FROM conversations WHERE contact_id = ? AND channel_account_id = ?`).all(contactId, channelAccountId)) as {
        id: string;
      }[];
      return rows.map((r) => r.id);
    },

    // ---------------------------------------------------------------- notes
    async insertNote(note: NoteRow): Promise<void> {
      await db.insert(conversationNotes).values(note).run();
    },
    async notes(conversationId: string): Promise<NoteRow[]> {
      return await db
        .select()
        .from(conversationNotes)
        .where(eq(conversationNotes.conversationId, conversationId))
        .orderBy(desc(conversationNotes.id))
        .limit(100)
        .all();
    },

    // ---------------------------------------------------------------- channel state
    /** Records an inbound message's provider timestamp (window) and the provider conversation reference. */
    async recordInbound({
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
    }): Promise<void> {
      await db
        .insert(contactChannelState)
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
    async channelState(contactId: string, channelAccountId: string) {
      return mapRow(contactChannelState, await db.sql(CHANNEL_STATE).get(contactId, channelAccountId));
    },
  };
}

export type ConversationsStore = ReturnType<typeof createConversationsStore>;

/** The store of a connection, built once. */
export const conversationsStore = perConnection(createConversationsStore);
