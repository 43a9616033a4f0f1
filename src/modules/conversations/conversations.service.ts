/**
 * Conversations: one open conversation per (contact, channel account). Messages in both directions
 * attach to it; a new inbound on a closed conversation opens it again. The messaging window state per
 * (contact, account) lives in contact_channel_state, independent of open/closed.
 *
 * The asynchronous store contract (issue 35, DESIGN §15): every function here awaits its store calls and
 * writes in `db.unit`/`db.join`; nothing here reads or writes storage synchronously.
 */
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import { AppError, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { conversationsStore, type ConversationFilter, type ConversationRow } from "./conversations.repository";
import { conversationView } from "./conversations.views";

export type { ConversationRow };
type WriteDeps = { db: Db; events: EventBus; now: () => Date };

/** The id of the open conversation of (contact, account), if there is one (a read: see openConversation's `found`). */
export async function findOpenConversation({
  db,
  contactId,
  channelAccountId,
}: {
  db: Db;
  contactId: string;
  channelAccountId: string;
}): Promise<string | null> {
  return (await conversationsStore(db).openConversationId(contactId, channelAccountId)) ?? null;
}

/**
 * The id of the open conversation of (contact, account), opened (and `conversation.opened` emitted) if none.
 * `found`: what findOpenConversation answered earlier in the caller's unit (read beside its other reads: on
 * PostgreSQL one round trip less), so it is not looked up again.
 */
export async function openConversation({
  db,
  events,
  now,
  companyId,
  contactId,
  channel,
  channelAccountId,
  found,
}: WriteDeps & { companyId: string; contactId: string; channel: string; channelAccountId: string; found?: string | null }): Promise<string> {
  const store = conversationsStore(db);
  return await db.join(async () => {
    // (null: found none. Another unit opening one meanwhile meets the one-open unique key, and its unit runs again.)
    const open = found !== undefined ? found : await store.openConversationId(contactId, channelAccountId);
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
      unreadCount: 0,
      createdAt: at,
      updatedAt: at,
    };
    await store.insertConversation(row);
    events.emit({ companyId, type: "conversation.opened", data: { conversation: conversationView(row) } });
    return row.id;
  });
}

/**
 * A new message in the conversation. `unread`: "inbound" counts one more unread message, "reply" (an agent's
 * own send) reads them all; null (a campaign's or an automatic send) leaves the count.
 */
export async function touchConversation({
  db,
  conversationId,
  messageId,
  at,
  unread = null,
}: {
  db: Db;
  conversationId: string;
  messageId: string;
  at: Date;
  unread?: "inbound" | "reply" | null;
}): Promise<void> {
  await conversationsStore(db).touch(conversationId, { at, messageId, unread });
}

/** POST /conversations/{id}/read: no unread message left; idempotent (already read: unchanged). */
export async function markConversationRead({ db, now, companyId, id }: { db: Db; now: () => Date; companyId: string; id: string }): Promise<ConversationRow> {
  return await db.unit(async () => {
    await getConversationRow({ db, companyId, id });
    await conversationsStore(db).markRead(id, now());
    return await getConversationRow({ db, companyId, id });
  });
}

/** Records an inbound message's provider timestamp (window) and the provider conversation reference. */
export async function recordInbound({
  db,
  now,
  companyId,
  contactId,
  channelAccountId,
  timestamp,
  conversationRef,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  contactId: string;
  channelAccountId: string;
  timestamp: Date;
  conversationRef?: string;
}): Promise<void> {
  await conversationsStore(db).recordInbound({ companyId, contactId, channelAccountId, timestamp, conversationRef, at: now() });
}

export async function channelState({ db, contactId, channelAccountId }: { db: Db; contactId: string; channelAccountId: string }) {
  return await conversationsStore(db).channelState(contactId, channelAccountId);
}

export async function getConversationRow({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<ConversationRow> {
  const c = await conversationsStore(db).ofCompany(companyId, id);
  if (!c) throw notFound("conversation");
  return c;
}

export async function listConversations({
  db,
  companyId,
  filter,
  limit,
  before,
}: {
  db: Db;
  companyId: string;
  filter: ConversationFilter;
  limit: number;
  before?: string;
}): Promise<ConversationRow[]> {
  return await conversationsStore(db).list({ companyId, filter, limit, before });
}

/**
 * The unread-first order: the unread conversations newest first (their partial index), then the read ones
 * newest first. The cursor's key says which part it is in: ["u", id] or ["r", id]. Fetches `limit` rows
 * (the caller asks one more to know of a next page).
 */
export async function listConversationsUnreadFirst({
  db,
  companyId,
  filter,
  limit,
  after,
}: {
  db: Db;
  companyId: string;
  filter: ConversationFilter;
  limit: number;
  after?: ["u" | "r", string];
}): Promise<ConversationRow[]> {
  const store = conversationsStore(db);
  const rows: ConversationRow[] = [];
  if (filter.unread !== false && (!after || after[0] === "u"))
    rows.push(...(await store.list({ companyId, filter: { ...filter, unread: true }, limit, before: after?.[1] })));
  if (rows.length < limit && filter.unread !== true)
    rows.push(
      ...(await store.list({
        companyId,
        filter: { ...filter, unread: false },
        limit: limit - rows.length,
        before: after?.[0] === "r" ? after[1] : undefined,
      })),
    );
  return rows;
}

export async function assignConversation({
  db,
  events,
  now,
  companyId,
  id,
  assignee,
}: WriteDeps & { companyId: string; id: string; assignee: { id: string; name?: string | null } | null }) {
  return await db.unit(async () => {
    const c = await getConversationRow({ db, companyId, id });
    const at = now();
    await conversationsStore(db).setAssignee(id, assignee, at);
    const row = await getConversationRow({ db, companyId, id });
    if (c.assigneeId !== row.assigneeId || c.assigneeName !== row.assigneeName)
      events.emit({ companyId, type: "conversation.assigned", data: { conversation: conversationView(row) } });
    return row;
  });
}

export async function closeConversation({ db, events, now, companyId, id }: WriteDeps & { companyId: string; id: string }): Promise<ConversationRow> {
  return await db.unit(async () => {
    const c = await getConversationRow({ db, companyId, id });
    if (c.status === "closed") return c; // closing twice is a no-op, not an error
    const at = now();
    await conversationsStore(db).close(id, at);
    const row = await getConversationRow({ db, companyId, id });
    events.emit({ companyId, type: "conversation.closed", data: { conversation: conversationView(row) } });
    return row;
  });
}

export async function reopenConversation({ db, events, now, companyId, id }: WriteDeps & { companyId: string; id: string }): Promise<ConversationRow> {
  return await db.unit(async () => {
    const c = await getConversationRow({ db, companyId, id });
    if (c.status === "open") return c;
    const other = await conversationsStore(db).otherOpen(c.contactId, c.channelAccountId);
    if (other) throw new AppError("CONFLICT", `The contact already has an open conversation on this account (${other.id})`);
    const at = now();
    await conversationsStore(db).reopen(id, at);
    const row = await getConversationRow({ db, companyId, id });
    events.emit({ companyId, type: "conversation.opened", data: { conversation: conversationView(row), reopened: true } });
    return row;
  });
}

/**
 * The id of the conversation a new inbound message goes to: the open one; on a closed conversation, the
 * contact's latest one reopened (or a new one).
 */
export async function conversationForInbound(
  deps: WriteDeps & { companyId: string; contactId: string; channel: string; channelAccountId: string },
): Promise<string> {
  const { db } = deps;
  const store = conversationsStore(db);
  return await db.unit(async () => {
    const open = await store.openConversationId(deps.contactId, deps.channelAccountId);
    if (open) return open;
    const latest = await store.latestOn(deps.contactId, deps.channelAccountId);
    if (latest) return (await reopenConversation({ ...deps, id: latest.id })).id;
    return await openConversation(deps);
  });
}

export async function addNote({
  db,
  now,
  companyId,
  id,
  text,
  author,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  id: string;
  text: string;
  author?: string | null;
}) {
  return await db.unit(async () => {
    await getConversationRow({ db, companyId, id });
    const note = { id: newId(), companyId, conversationId: id, text, author: author ?? null, createdAt: now() };
    const store = conversationsStore(db);
    await store.insertNote(note);
    await store.touchUpdatedAt(id, now());
    return note;
  });
}

export async function listNotes({ db, conversationId }: { db: Db; conversationId: string }) {
  return await conversationsStore(db).notes(conversationId);
}

/** Ids of the conversations of these contacts (any account, open or closed). */
export async function conversationsOfContacts({ db, contactIds }: { db: Db; contactIds: string[] }): Promise<string[]> {
  if (!contactIds.length) return [];
  return await conversationsStore(db).idsOfContacts(contactIds);
}

/** Ids of a contact's conversations on one account (open or closed). */
export async function conversationsOfContactOn({
  db,
  contactId,
  channelAccountId,
}: {
  db: Db;
  contactId: string;
  channelAccountId: string;
}): Promise<string[]> {
  return await conversationsStore(db).idsOfContactOn(contactId, channelAccountId);
}
