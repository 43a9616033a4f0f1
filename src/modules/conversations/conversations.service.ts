/**
 * Conversations: one open conversation per (contact, channel account). Messages in both directions
 * attach to it; a new inbound on a closed conversation opens it again. The messaging window state per
 * (contact, account) lives in contact_channel_state, independent of open/closed.
 */
import { and, desc, eq, lt, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { greatestFn, jsonValues, perEngine } from "../../db/dialect";
import type { EventBus } from "../../platform/events/events";
import { AppError, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { insertRow, mapRow, updateRow } from "../../db/rows";
import { contactChannelState, conversationNotes, conversations } from "./conversations.table";

export type ConversationRow = typeof conversations.$inferSelect;
type WriteDeps = { db: Db; events: EventBus; now: () => Date };

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
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

/** The id of the open conversation of (contact, account), opened (and `conversation.opened` emitted) if none. */
export function openConversation({ db, events, now, companyId, contactId, channel, channelAccountId }: WriteDeps & { companyId: string; contactId: string; channel: string; channelAccountId: string }): string {
  return db.within(() => {
    const open = openConversationId(db, contactId, channelAccountId);
    if (open) return open;
    const at = now();
    const row: ConversationRow = {
      id: newId(),
      companyId,
      contactId,
      channel,
      channelAccountId,
      status: "open",
      assigneeId: null,
      assigneeName: null,
      lastMessageAt: null,
      lastMessageId: null,
      closedAt: null,
      createdAt: at,
      updatedAt: at,
    };
    insertRow(db, conversations, row);
    events.emit({ companyId, type: "conversation.opened", data: { conversation: conversationView(row) } });
    return row.id;
  });
}

export function touchConversation({ db, conversationId, messageId, at }: { db: Db; conversationId: string; messageId: string; at: Date }): void {
  updateRow(db, conversations, conversationId, { lastMessageAt: at, lastMessageId: messageId, updatedAt: at });
}

/** (Every send asks: the id alone, not the row.) */
function openConversationId(db: Db, contactId: string, channelAccountId: string): string | undefined {
  return (db.$client.query(`SELECT id FROM conversations WHERE contact_id = ? AND channel_account_id = ? AND status = 'open'`).get(contactId, channelAccountId) as { id: string } | null)?.id;
}

/** Records an inbound message's provider timestamp (window) and the provider conversation reference. */
export function recordInbound({ db, now, companyId, contactId, channelAccountId, timestamp, conversationRef }: { db: Db; now: () => Date; companyId: string; contactId: string; channelAccountId: string; timestamp: Date; conversationRef?: string }): void {
  const at = now();
  db.insert(contactChannelState)
    .values({ contactId, channelAccountId, companyId, lastInboundAt: timestamp, conversationRef: conversationRef ?? null, updatedAt: at })
    .onConflictDoUpdate({
      target: [contactChannelState.contactId, contactChannelState.channelAccountId],
      // Out-of-order webhooks must not move the window backwards.
      set: {
        lastInboundAt: sql`${sql.raw(greatestFn(db.engine))}(coalesce(${contactChannelState.lastInboundAt}, 0), ${timestamp.getTime()})`,
        conversationRef: conversationRef ? conversationRef : sql`${contactChannelState.conversationRef}`,
        updatedAt: at,
      },
    })
    .run();
}

export function channelState({ db, contactId, channelAccountId }: { db: Db; contactId: string; channelAccountId: string }) {
  const raw = db.$client.query(`SELECT * FROM contact_channel_state WHERE contact_id = ? AND channel_account_id = ?`).get(contactId, channelAccountId);
  return mapRow(contactChannelState, raw as Record<string, unknown> | null);
}

export function getConversationRow({ db, companyId, id }: { db: Db; companyId: string; id: string }): ConversationRow {
  const c = db.select().from(conversations).where(and(eq(conversations.id, id), eq(conversations.companyId, companyId))).get();
  if (!c) throw notFound("conversation");
  return c;
}

export function listConversations({
  db,
  companyId,
  filter,
  limit,
  before,
}: {
  db: Db;
  companyId: string;
  filter: { status?: string; channel?: string; assigneeId?: string; contactId?: string; unassigned?: boolean };
  limit: number;
  before?: string;
}): ConversationRow[] {
  const where: SQL[] = [eq(conversations.companyId, companyId)];
  if (filter.status) where.push(eq(conversations.status, filter.status));
  if (filter.channel) where.push(eq(conversations.channel, filter.channel));
  if (filter.assigneeId) where.push(eq(conversations.assigneeId, filter.assigneeId));
  if (filter.contactId) where.push(eq(conversations.contactId, filter.contactId));
  if (before) where.push(lt(conversations.id, before));
  return db.select().from(conversations).where(and(...where)).orderBy(desc(conversations.id)).limit(limit).all();
}

export function assignConversation({ db, events, now, companyId, id, assignee }: WriteDeps & { companyId: string; id: string; assignee: { id: string; name?: string | null } | null }) {
  return db.tx(() => {
    const c = getConversationRow({ db, companyId, id });
    const at = now();
    db.update(conversations)
      .set({ assigneeId: assignee?.id ?? null, assigneeName: assignee ? (assignee.name ?? null) : null, updatedAt: at })
      .where(eq(conversations.id, id))
      .run();
    const row = getConversationRow({ db, companyId, id });
    if (c.assigneeId !== row.assigneeId || c.assigneeName !== row.assigneeName)
      events.emit({ companyId, type: "conversation.assigned", data: { conversation: conversationView(row) } });
    return row;
  });
}

export function closeConversation({ db, events, now, companyId, id }: WriteDeps & { companyId: string; id: string }) {
  return db.tx(() => {
    const c = getConversationRow({ db, companyId, id });
    if (c.status === "closed") return c; // closing twice is a no-op, not an error
    const at = now();
    db.update(conversations).set({ status: "closed", closedAt: at, updatedAt: at }).where(eq(conversations.id, id)).run();
    const row = getConversationRow({ db, companyId, id });
    events.emit({ companyId, type: "conversation.closed", data: { conversation: conversationView(row) } });
    return row;
  });
}

export function reopenConversation({ db, events, now, companyId, id }: WriteDeps & { companyId: string; id: string }) {
  return db.tx(() => {
    const c = getConversationRow({ db, companyId, id });
    if (c.status === "open") return c;
    const other = db
      .select({ id: conversations.id })
      .from(conversations)
      .where(and(eq(conversations.contactId, c.contactId), eq(conversations.channelAccountId, c.channelAccountId), eq(conversations.status, "open")))
      .get();
    if (other) throw new AppError("CONFLICT", `The contact already has an open conversation on this account (${other.id})`);
    const at = now();
    db.update(conversations).set({ status: "open", closedAt: null, updatedAt: at }).where(eq(conversations.id, id)).run();
    const row = getConversationRow({ db, companyId, id });
    events.emit({ companyId, type: "conversation.opened", data: { conversation: conversationView(row), reopened: true } });
    return row;
  });
}

/**
 * The id of the conversation a new inbound message goes to: the open one; on a closed conversation, the
 * contact's latest one reopened (or a new one).
 */
export function conversationForInbound(deps: WriteDeps & { companyId: string; contactId: string; channel: string; channelAccountId: string }): string {
  const { db } = deps;
  return db.tx(() => {
    const open = openConversationId(db, deps.contactId, deps.channelAccountId);
    if (open) return open;
    const latest = db
      .select()
      .from(conversations)
      .where(and(eq(conversations.contactId, deps.contactId), eq(conversations.channelAccountId, deps.channelAccountId)))
      .orderBy(desc(conversations.id))
      .limit(1)
      .get();
    if (latest) return reopenConversation({ ...deps, id: latest.id }).id;
    return openConversation(deps);
  });
}

export function addNote({ db, now, companyId, id, text, author }: { db: Db; now: () => Date; companyId: string; id: string; text: string; author?: string | null }) {
  return db.tx(() => {
    getConversationRow({ db, companyId, id });
    const note = { id: newId(), companyId, conversationId: id, text, author: author ?? null, createdAt: now() };
    db.insert(conversationNotes).values(note).run();
    db.update(conversations).set({ updatedAt: now() }).where(eq(conversations.id, id)).run();
    return note;
  });
}

export function listNotes({ db, conversationId }: { db: Db; conversationId: string }) {
  return db.select().from(conversationNotes).where(eq(conversationNotes.conversationId, conversationId)).orderBy(desc(conversationNotes.id)).limit(100).all();
}

const CONVERSATIONS_OF_CONTACTS = perEngine((e) => `SELECT id FROM conversations WHERE contact_id IN (${jsonValues(e)})`);

/** Ids of the conversations of these contacts (any account, open or closed). */
export function conversationsOfContacts({ db, contactIds }: { db: Db; contactIds: string[] }): string[] {
  if (!contactIds.length) return [];
  return (db.$client.query(CONVERSATIONS_OF_CONTACTS[db.engine]).all(JSON.stringify(contactIds)) as { id: string }[]).map((r) => r.id);
}

/** Ids of a contact's conversations on one account (open or closed). */
export function conversationsOfContactOn({ db, contactId, channelAccountId }: { db: Db; contactId: string; channelAccountId: string }): string[] {
  return (db.$client.query(`SELECT id FROM conversations WHERE contact_id = ? AND channel_account_id = ?`).all(contactId, channelAccountId) as { id: string }[]).map((r) => r.id);
}
