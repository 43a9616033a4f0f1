/**
 * The messages table's one reader and writer. Other modules reach messages through messages.service.ts
 * (conversation history, media in use, campaign replies), never through this file or the table.
 * Hot statements are raw SQL cached by bun per text (see db/rows.ts), typed back to drizzle rows by mapRow.
 */
import type { Db } from "../../db/client";
import { jsonValues, perEngine } from "../../db/dialect";
import { insertRow, mapRow, updateRow } from "../../db/rows";
import { messages, DAILY_LIMITED_OUTBOUND } from "./messages.table";

export type MessageRow = typeof messages.$inferSelect;
type Raw = Record<string, unknown> | null;

const one = (raw: unknown) => mapRow(messages, raw as Raw);
const many = (raws: unknown[]) => raws.map((r) => mapRow(messages, r as Raw)!);

const HEAD = "id, company_id, contact_id, channel, status, charged, refunded, unit_price, campaign_id";

/** The statements whose text differs by engine, or whose plan a test checks (messages.repository.test.ts). */
export const SQL = perEngine((e) => ({
  outboundSentUpTo: `SELECT ${HEAD} FROM messages WHERE conversation_id IN (${jsonValues(e, "?1")}) AND direction = 'outbound'
         AND status IN (${jsonValues(e, "?2")}) AND sent_at <= ?3`,
  // Every queued message has its dispatch job until it is sent or failed (a dead job stays listed): the
  // backlog is searched, not the company's messages.
  queuedWithMedia: `SELECT m.id FROM jobs j JOIN messages m ON m.id = ${e === "sqlite" ? "json_extract(j.payload, '$.messageId')" : "j.payload::json ->> 'messageId'"}
       WHERE j.type IN (?1, ?2) AND m.company_id = ?3 AND m.status = 'queued'
       AND (${
         e === "sqlite"
           ? "json_extract(m.content, '$.media.file.id') = ?4 OR json_extract(m.content, '$.template.headerMedia.file.id') = ?4"
           : "m.content::json #>> '{media,file,id}' = ?4 OR m.content::json #>> '{template,headerMedia,file,id}' = ?4"
       }) LIMIT 1`,
  countDailyLimited: `SELECT count(*) AS n FROM messages WHERE channel_account_id = ? AND ${DAILY_LIMITED_OUTBOUND} AND created_at >= ?`,
  countIn: `SELECT count(*) AS n FROM messages WHERE conversation_id IN (${jsonValues(e)})`,
  countInboundIn: `SELECT count(*) AS n FROM (SELECT 1 FROM messages WHERE conversation_id IN (${jsonValues(e, "?1")}) AND direction = 'inbound' LIMIT ?2) m`,
}));

export function insertMessage(db: Db, row: MessageRow): void {
  insertRow(db, messages, row);
}

export function updateMessage(db: Db, id: string, changes: Partial<MessageRow>): void {
  updateRow(db, messages, id, changes);
}

export function messageById(db: Db, id: string): MessageRow | undefined {
  return one(db.$client.query(`SELECT * FROM messages WHERE id = ?`).get(id));
}

/** A message's status alone (a primary-key search reading one column). */
export function messageStatus(db: Db, id: string): string | undefined {
  return (db.$client.query(`SELECT status FROM messages WHERE id = ?`).get(id) as { status: string } | null)?.status;
}

/**
 * What a status change reads of a message: no content, metadata or times (a `SELECT *` of a message row cost
 * ~5 µs more in bun and the row mapper, twice per message for its delivered and read reports).
 */
export type MessageHead = Pick<MessageRow, "id" | "companyId" | "contactId" | "channel" | "status" | "charged" | "refunded" | "unitPrice" | "campaignId">;

/** What the dispatch reads: the head and what the send is built from. */
export type DispatchRow = MessageHead & Pick<MessageRow, "channelAccountId" | "type" | "content" | "address" | "replyToMessageId">;

export function messageHead(db: Db, id: string): MessageHead | undefined {
  return one(db.$client.query(`SELECT ${HEAD} FROM messages WHERE id = ?`).get(id));
}

export function messageHeadByProviderId(db: Db, channelAccountId: string, providerMessageId: string): MessageHead | undefined {
  return one(db.$client.query(`SELECT ${HEAD} FROM messages WHERE channel_account_id = ? AND provider_message_id = ?`).get(channelAccountId, providerMessageId));
}

export function messageIdByProviderId(db: Db, channelAccountId: string, providerMessageId: string): string | undefined {
  return (db.$client.query(`SELECT id FROM messages WHERE channel_account_id = ? AND provider_message_id = ?`).get(channelAccountId, providerMessageId) as { id: string } | null)?.id;
}

export function dispatchRow(db: Db, id: string): DispatchRow | undefined {
  return one(db.$client.query(`SELECT ${HEAD}, channel_account_id, type, content, address, reply_to_message_id FROM messages WHERE id = ?`).get(id));
}

export function messageOfCompany(db: Db, companyId: string, id: string): MessageRow | undefined {
  return one(db.$client.query(`SELECT * FROM messages WHERE id = ? AND company_id = ?`).get(id, companyId));
}

/** Outbound messages of an account on a daily-limited channel created since `since` (X daily DM limit). */
export function countOutboundSince(db: Db, channelAccountId: string, since: Date): number {
  return (
    db.$client
      .query(SQL[db.engine].countDailyLimited)
      .get(channelAccountId, since.getTime()) as { n: number }
  ).n;
}

/** Outbound messages in these conversations in the given statuses, sent at or before `sentBefore` (watermark receipts). */
export function outboundSentUpTo(db: Db, { conversationIds, statuses, sentBefore }: { conversationIds: string[]; statuses: string[]; sentBefore: Date }): MessageHead[] {
  if (!conversationIds.length) return [];
  return many(db.$client.query(SQL[db.engine].outboundSentUpTo).all(JSON.stringify(conversationIds), JSON.stringify(statuses), sentBefore.getTime()));
}

/** A conversation's messages, newest first, keyset on id. */
export function conversationMessages(db: Db, { conversationId, limit, before }: { conversationId: string; limit: number; before?: string }): MessageRow[] {
  return many(
    db.$client
      .query(`SELECT * FROM messages WHERE conversation_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3`)
      .all(conversationId, before ?? null, limit),
  );
}

/**
 * A queued message whose content holds this media: the messaging engine stores the StoredMedia at
 * `$.media.file` (media messages) and `$.template.headerMedia.file` (template header media).
 */
export function queuedMessageWithMedia(db: Db, { companyId, mediaId, dispatchJobs }: { companyId: string; mediaId: string; dispatchJobs: [string, string] }): string | undefined {
  const r = db.$client.query(SQL[db.engine].queuedWithMedia).get(dispatchJobs[0], dispatchJobs[1], companyId, mediaId) as { id: string } | null;
  return r?.id;
}

/** Messages of both directions in these conversations. */
export function countInConversations(db: Db, conversationIds: string[]): number {
  if (!conversationIds.length) return 0;
  return (db.$client.query(SQL[db.engine].countIn).get(JSON.stringify(conversationIds)) as { n: number }).n;
}

/** Inbound messages in these conversations, counted up to `cap` (is this a contact's first?). */
export function countInboundIn(db: Db, conversationIds: string[], cap: number): number {
  if (!conversationIds.length) return 0;
  return (
    db.$client
      .query(SQL[db.engine].countInboundIn)
      .get(JSON.stringify(conversationIds), cap) as { n: number }
  ).n;
}
