/**
 * The messages table's one reader and writer. Other modules reach messages through the module's service files
 * (messages.service.ts: conversation history, media in use, campaign replies; messages.quota.ts, .views.ts), never through this file or the table.
 * Hot statements are raw SQL cached by bun per text (see db/rows.ts), typed back to drizzle rows by mapRow.
 */
import { storeDb, type Db } from "../../db/client";
import { jsonValues, perEngine, unplanned, type Engine } from "../../db/dialect";
import { insertInto, mapRow, updateById } from "../../db/rows";
import { messages, DAILY_LIMITED_OUTBOUND, DISPATCH_JOBS, DISPATCH_LANES } from "./messages.table";
import type { JobAnchor } from "../../platform/queue/queue";
import { perConnection } from "../../db/per-connection";

export type MessageRow = typeof messages.$inferSelect;
type Raw = Record<string, unknown> | null;

const one = (raw: unknown) => mapRow(messages, raw as Raw);
const many = (raws: unknown[]) => raws.map((r) => mapRow(messages, r as Raw)!);

const HEAD = "id, company_id, contact_id, channel, status, charged, refunded, unit_price, campaign_id";

/**
 * The company's queued messages, as rows of `messages m` with the columns `cols` (`company` is the SQL of its
 * parameter), found where the dispatch keeps them rather than among the company's history — there is no index
 * of queued messages (an entry written at acceptance and removed at `sent` costs every message twice):
 * - a message whose first attempt has not ended is on its lane's index (DISPATCH_LANES), keyed by channel
 *   account. The lane's accounts are walked key by key (O(accounts), as the queue's `groups` does) and an
 *   account is kept when its first queued message is the company's (an account belongs to one company, the
 *   one the configuration names); then that account's range of the index, each row checked for the company
 *   (NB! `+m.company_id` on SQLite, or its planner walks messages_company_created_idx, the company's history);
 * - a retry is a dispatch jobs row (DISPATCH_JOBS; a dead job stays listed, its message failed): the jobs of
 *   the two types on jobs_claim_idx, each message checked for company and status. Disjoint from the lanes:
 *   a message leaves its lane (lease_until NULL) when its jobs row is written, in the same transaction.
 */
export function companyBacklog(e: Engine, cols: string, company: string): string {
  const payloadId = e === "sqlite" ? "json_extract(j.payload, '$.messageId')" : "j.payload::json ->> 'messageId'";
  const lane = (cond: string) => `SELECT ${cols} FROM messages m WHERE ${cond} AND m.channel_account_id IN (
       WITH RECURSIVE g(k) AS (
         SELECT (SELECT channel_account_id FROM messages WHERE ${cond} ORDER BY channel_account_id LIMIT 1)
         UNION ALL
         SELECT (SELECT channel_account_id FROM messages WHERE ${cond} AND channel_account_id > g.k ORDER BY channel_account_id LIMIT 1) FROM g WHERE g.k IS NOT NULL)
       SELECT k FROM g WHERE k IS NOT NULL AND (SELECT company_id FROM messages WHERE ${cond} AND channel_account_id = g.k LIMIT 1) = ${company})
     AND ${e === "sqlite" ? "+" : ""}m.company_id = ${company}`;
  return `SELECT ${cols} FROM jobs j JOIN messages m ON m.id = ${payloadId}
       WHERE j.type IN ('${DISPATCH_JOBS.direct}', '${DISPATCH_JOBS.bulk}') AND m.company_id = ${company} AND m.status = 'queued'
     UNION ALL
     ${lane(DISPATCH_LANES.direct)}
     UNION ALL
     ${lane(DISPATCH_LANES.bulk)}`;
}

/** The statements whose text differs by engine, or whose plan a test checks (messages.repository.test.ts). */
export const SQL = perEngine((e) => ({
  // (provider_message_id too: the caller matches each report to its message by it.) NB! Driven from the ids, one
  // probe of the index by provider id each, whatever the statistics say: PostgreSQL planned `IN (subquery)` as a
  // hash join over every message of the account (6.6 ms a report at 10,000 messages, growing with them), so there
  // it is a LATERAL probe per id (its LIMIT 1 — the key is unique — keeps the planner from turning it back into a
  // join). messages.repository.test.ts checks both engines' plans.
  headsByProviderIds:
    e === "sqlite"
      ? `SELECT ${HEAD}, provider_message_id FROM messages WHERE channel_account_id = ?1 AND provider_message_id IN (${jsonValues(e, "?2")})`
      : `SELECT m.* FROM json_array_elements_text(?2::json) AS j(value) CROSS JOIN LATERAL
           (SELECT ${HEAD}, provider_message_id FROM messages WHERE channel_account_id = ?1 AND provider_message_id = j.value LIMIT 1) m`,
  outboundSentUpTo: `SELECT ${HEAD} FROM messages WHERE conversation_id IN (${jsonValues(e, "?1")}) AND direction = 'outbound'
         AND status IN (${jsonValues(e, "?2")}) AND sent_at <= ?3`,
  // The company's backlog (companyBacklog), not its history, and its scheduled messages (each has its due
  // job's row): ?1 company, ?2 media id, ?3 the due job's type.
  queuedWithMedia: `SELECT id FROM (${companyBacklog(e, "m.id, m.content", "?1")}
     UNION ALL
     SELECT m.id, m.content FROM jobs j JOIN messages m ON m.id = ${e === "sqlite" ? "json_extract(j.payload, '$.messageId')" : "j.payload::json ->> 'messageId'"}
       WHERE j.type = ?3 AND m.company_id = ?1 AND m.status = 'scheduled') m
     WHERE ${
       e === "sqlite"
         ? "json_extract(m.content, '$.media.file.id') = ?2 OR json_extract(m.content, '$.template.headerMedia.file.id') = ?2"
         : "m.content::json #>> '{media,file,id}' = ?2 OR m.content::json #>> '{template,headerMedia,file,id}' = ?2"
     } LIMIT 1`,
  countDailyLimited: `SELECT count(*) AS n FROM messages WHERE channel_account_id = ? AND ${DAILY_LIMITED_OUTBOUND} AND created_at >= ?`,
  statsByBucket: (byChannel: boolean) =>
    `SELECT (created_at - ?2) / ?3 AS b, status, count(*) AS n FROM messages
     WHERE company_id = ?1 AND created_at >= ?4 AND created_at < ?5${byChannel ? " AND channel = ?6" : ""} GROUP BY b, status`,
  // The company's backlog (companyBacklog) by channel, and nothing of its history: ?1 company.
  queuedByChannel: `SELECT channel, count(*) AS n, min(created_at) AS oldest FROM (${companyBacklog(e, "m.channel, m.created_at", "?1")}) q GROUP BY channel`,
  // messages_company_failed_idx (the status written out: a partial index serves only a query that names it).
  countFailedSince: `SELECT count(*) AS n FROM messages WHERE company_id = ? AND status = 'failed' AND created_at >= ?`,
  recentOutboundByAccount: `SELECT channel_account_id, status, count(*) AS n, max(sent_at) AS last_sent FROM messages
     WHERE company_id = ? AND created_at >= ? AND direction = 'outbound' GROUP BY channel_account_id, status`,
  // The newest failure of each account among the company's newest ?2 failed messages: one walk of
  // messages_company_failed_idx, whatever the number of accounts.
  lastFailures: `SELECT channel_account_id, failed_at, error_reason FROM (
       SELECT channel_account_id, failed_at, error_reason, row_number() OVER (PARTITION BY channel_account_id ORDER BY created_at DESC, id DESC) AS rn
       FROM (SELECT channel_account_id, failed_at, error_reason, created_at, id FROM messages
             WHERE company_id = ?1 AND status = 'failed' ORDER BY created_at DESC, id DESC LIMIT ${unplanned("?2", "INTEGER")}) newest) f
     WHERE rn = 1`,
  countIn: `SELECT count(*) AS n FROM messages WHERE conversation_id IN (${jsonValues(e)})`,
  countInboundIn: `SELECT count(*) AS n FROM (SELECT 1 FROM messages WHERE conversation_id IN (${jsonValues(e, "?1")}) AND direction = 'inbound' LIMIT ?2) m`,
}));

/**
 * The dispatch statements of one lane (one-to-one or campaign sends): a queued message is its own dispatch
 * job on its row until its first attempt ends (queue.ts JobAnchor). Every condition says the lane's index
 * condition word for word (SQLite uses a partial index only then).
 */
const laneSQL = (e: Engine, lane: string) => {
  const skipLocked = e === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
  return {
    // (SQLite: by rowid, the index's own pointer to the row, not a search of the primary key per message.)
    claim: `UPDATE messages SET lease_token = ?1, lease_until = ?2 WHERE ${e === "sqlite" ? "rowid" : "id"} IN (
       SELECT ${e === "sqlite" ? "rowid" : "id"} FROM messages WHERE ${lane} AND channel_account_id = ${unplanned("?3", "TEXT")} AND lease_token IS NULL AND lease_until <= ?4
       ORDER BY lease_until LIMIT ${unplanned("?5", "INTEGER")}${skipLocked})
     RETURNING id`,
    // The accounts with queued messages: a walk over the distinct keys of the lane's index, O(accounts).
    groups: `WITH RECURSIVE g(k) AS (
       SELECT (SELECT channel_account_id FROM messages WHERE ${lane} ORDER BY channel_account_id LIMIT 1)
       UNION ALL
       SELECT (SELECT channel_account_id FROM messages WHERE ${lane} AND channel_account_id > g.k ORDER BY channel_account_id LIMIT 1) FROM g WHERE g.k IS NOT NULL)
     SELECT k AS group_key, (SELECT min(lease_until) FROM messages WHERE ${lane} AND channel_account_id = g.k AND lease_token IS NULL) AS first FROM g WHERE k IS NOT NULL`,
    expired: `SELECT id, lease_token FROM messages WHERE ${lane} AND channel_account_id = ?1 AND lease_token IS NOT NULL AND lease_until < ?2 LIMIT ${unplanned("?3", "INTEGER")}${skipLocked}`,
    count: `SELECT count(*) - count(lease_token) AS pending, count(lease_token) AS running FROM messages WHERE ${lane}`,
  };
};
export const LANE_SQL = perEngine((e) => ({ direct: laneSQL(e, DISPATCH_LANES.direct), bulk: laneSQL(e, DISPATCH_LANES.bulk) }));

/**
 * What a status change reads of a message: no content, metadata or times (a `SELECT *` of a message row cost
 * ~5 µs more in bun and the row mapper, twice per message for its delivered and read reports).
 */
export type MessageHead = Pick<MessageRow, "id" | "companyId" | "contactId" | "channel" | "status" | "charged" | "refunded" | "unitPrice" | "campaignId">;

/** What the dispatch reads: the head and what the send is built from. */
export type DispatchRow = MessageHead & Pick<MessageRow, "channelAccountId" | "type" | "content" | "address" | "replyToMessageId">;

export function createMessagesStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const sql = SQL[db.engine];
  const lanes = LANE_SQL[db.engine];
  return {
    /** The dispatch lane's job anchor: the queue claims, renews and releases messages themselves (queue.ts JobAnchor). */
    dispatchAnchor(lane: keyof typeof DISPATCH_LANES): JobAnchor<{ messageId: string }> {
      const q = lanes[lane];
      return {
        claim: async (group, now, limit, token, until) =>
          ((await db.sql(q.claim).all(token, until, group, now, limit)) as { id: string }[]).map((r) => ({ messageId: r.id })),
        groups: async () =>
          ((await db.sql(q.groups).all()) as { group_key: string; first: number | null }[]).map((r) => ({
            groupKey: r.group_key,
            first: r.first === null ? null : Number(r.first),
          })),
        renew: async ({ messageId }, token, until) =>
          (await db.sql(`UPDATE messages SET lease_until = ? WHERE id = ? AND lease_token = ? AND status = 'queued'`).run(until, messageId, token)).changes > 0,
        release: async ({ messageId }, token, at) =>
          (
            await db
              .sql(`UPDATE messages SET lease_token = NULL, lease_until = ? WHERE id = ? AND lease_token = ? AND status = 'queued'`)
              .run(at, messageId, token)
          ).changes > 0,
        expired: async (group, before, limit) =>
          ((await db.sql(q.expired).all(group, before, limit)) as { id: string; lease_token: string }[]).map((r) => ({
            payload: { messageId: r.id },
            token: r.lease_token,
          })),
        count: async () => {
          const r = (await db.sql(q.count).get()) as { pending: number; running: number };
          return { pending: Number(r.pending), running: Number(r.running) };
        },
      };
    },

    async insertMessage(row: MessageRow): Promise<void> {
      await insertInto(db, messages, row);
    },

    /** A released scheduled message's hold on its dispatch lane (queue.ts JobAnchor): due at `until`, or held by `token`. */
    async placeOnLane(id: string, hold: { until: number; token: string | null }): Promise<void> {
      await updateById(db, messages, id, { leaseUntil: hold.until, leaseToken: hold.token });
    },

    /**
     * A status change's write (applyStatus, the one writer of a message row after its insert), made only while
     * the row's status is still `from`: false when it has moved since it was read (nothing written).
     */
    async recordStatus(id: string, from: string, changes: Partial<MessageRow>): Promise<boolean> {
      return (await updateById(db, messages, id, changes, { column: "status", value: from })) > 0;
    },

    /**
     * A scheduled message falls due: scheduled → queued, only while it is still scheduled (false: canceled, or
     * an earlier run of its job got there first). With cancelScheduled, the one fence between the due job and
     * a cancel: whichever commits its UPDATE first wins, the other changes nothing (on PostgreSQL the second
     * waits for the first's row lock and then finds the status moved).
     */
    async claimDue(id: string, now: Date): Promise<boolean> {
      return (await db.sql(`UPDATE messages SET status = 'queued', updated_at = ? WHERE id = ? AND status = 'scheduled'`).run(now.getTime(), id)).changes > 0;
    },

    /** A scheduled message of the company is canceled (refunded when charged), only while still scheduled; false otherwise. */
    async cancelScheduled(companyId: string, id: string, now: Date): Promise<boolean> {
      return (
        (
          await db
            .sql(`UPDATE messages SET status = 'canceled', refunded = charged, updated_at = ? WHERE id = ? AND company_id = ? AND status = 'scheduled'`)
            .run(now.getTime(), id, companyId)
        ).changes > 0
      );
    },

    async messageById(id: string): Promise<MessageRow | undefined> {
      return one(await db.sql(`SELECT * FROM messages WHERE id = ?`).get(id));
    },

    /** A message's status alone (a primary-key search reading one column). */
    async messageStatus(id: string): Promise<string | undefined> {
      return ((await db.sql(`SELECT status FROM messages WHERE id = ?`).get(id)) as { status: string } | null)?.status;
    },

    async messageHead(id: string): Promise<MessageHead | undefined> {
      return one(await db.sql(`SELECT ${HEAD} FROM messages WHERE id = ?`).get(id));
    },

    async messageHeadByProviderId(channelAccountId: string, providerMessageId: string): Promise<MessageHead | undefined> {
      return one(
        await db.sql(`SELECT ${HEAD} FROM messages WHERE channel_account_id = ? AND provider_message_id = ?`).get(channelAccountId, providerMessageId),
      );
    },

    /** An account's messages by provider message id, each with it: a scheduled job's reports read in one statement. */
    async messageHeadsByProviderIds(channelAccountId: string, providerMessageIds: string[]): Promise<(MessageHead & { providerMessageId: string })[]> {
      if (!providerMessageIds.length) return [];
      return many(await db.sql(sql.headsByProviderIds).all(channelAccountId, JSON.stringify(providerMessageIds))) as (MessageHead & {
        providerMessageId: string;
      })[];
    },

    async messageIdByProviderId(channelAccountId: string, providerMessageId: string): Promise<string | undefined> {
      return (
        (await db.sql(`SELECT id FROM messages WHERE channel_account_id = ? AND provider_message_id = ?`).get(channelAccountId, providerMessageId)) as {
          id: string;
        } | null
      )?.id;
    },

    async dispatchRow(id: string): Promise<DispatchRow | undefined> {
      return one(await db.sql(`SELECT ${HEAD}, channel_account_id, type, content, address, reply_to_message_id FROM messages WHERE id = ?`).get(id));
    },

    async messageOfCompany(companyId: string, id: string): Promise<MessageRow | undefined> {
      return one(await db.sql(`SELECT * FROM messages WHERE id = ? AND company_id = ?`).get(id, companyId));
    },

    /** Outbound messages of an account on a daily-limited channel created since `since` (X daily DM limit). */
    async countOutboundSince(channelAccountId: string, since: Date): Promise<number> {
      return ((await db.sql(sql.countDailyLimited).get(channelAccountId, since.getTime())) as { n: number }).n;
    },

    /** Outbound messages in these conversations in the given statuses, sent at or before `sentBefore` (watermark receipts). */
    async outboundSentUpTo({
      conversationIds,
      statuses,
      sentBefore,
    }: {
      conversationIds: string[];
      statuses: string[];
      sentBefore: Date;
    }): Promise<MessageHead[]> {
      if (!conversationIds.length) return [];
      return many(await db.sql(sql.outboundSentUpTo).all(JSON.stringify(conversationIds), JSON.stringify(statuses), sentBefore.getTime()));
    },

    /** A conversation's messages, newest first, keyset on id. */
    async conversationMessages({ conversationId, limit, before }: { conversationId: string; limit: number; before?: string }): Promise<MessageRow[]> {
      return many(
        await db
          .sql(`SELECT * FROM messages WHERE conversation_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3`)
          .all(conversationId, before ?? null, limit),
      );
    },

    /**
     * A queued or scheduled message whose content holds this media: the messaging engine stores the StoredMedia at
     * `$.media.file` (media messages) and `$.template.headerMedia.file` (template header media).
     */
    async queuedMessageWithMedia({ companyId, mediaId, dueJob }: { companyId: string; mediaId: string; dueJob: string }): Promise<string | undefined> {
      const r = (await db.sql(sql.queuedWithMedia).get(companyId, mediaId, dueJob)) as { id: string } | null;
      return r?.id;
    },

    /** GET /messages: a page of the company's messages, newest first (listSQL says the cost). */
    async list({ companyId, filter, limit }: { companyId: string; filter: MessageListFilter; limit: number }): Promise<MessageRow[]> {
      const { text, args } = listSQL(filter, db.engine);
      return many(await db.sql(text).all(companyId, limit, ...(args as string[])));
    },

    /**
     * GET /messages/stats: the company's messages created in [from, to) counted by bucket (`size` ms from
     * `start`) and current status — a range of messages_company_created_idx, reading each message of the
     * window once (a channel filter skips the others); nothing outside it.
     */
    async countByBucket({
      companyId,
      channel,
      start,
      size,
      from,
      to,
    }: {
      companyId: string;
      channel?: string;
      start: number;
      size: number;
      from: number;
      to: number;
    }) {
      const rows = (await db
        .sql(sql.statsByBucket(channel !== undefined))
        .all(companyId, start, size, from, to, ...(channel !== undefined ? [channel] : []))) as { b: number; status: string; n: number }[];
      return rows.map((r) => ({ bucket: Number(r.b), status: r.status, count: Number(r.n) }));
    },

    /**
     * The company's queued messages by channel, and the oldest one's creation: the company's share of the
     * dispatch backlog (companyBacklog) — the cost of the backlog itself, nothing of the sent history.
     */
    async queuedByChannel(companyId: string): Promise<{ byChannel: Record<string, number>; oldest: number | null }> {
      const rows = (await db.sql(sql.queuedByChannel).all(companyId)) as { channel: string; n: number; oldest: number }[];
      const byChannel: Record<string, number> = {};
      let oldest: number | null = null;
      for (const r of rows) {
        byChannel[r.channel] = Number(r.n);
        oldest = oldest === null ? Number(r.oldest) : Math.min(oldest, Number(r.oldest));
      }
      return { byChannel, oldest };
    },

    /** The company's failed messages created since `since`, counted on messages_company_failed_idx alone. */
    async countFailedSince(companyId: string, since: number): Promise<number> {
      return Number(((await db.sql(sql.countFailedSince).get(companyId, since)) as { n: number }).n);
    },

    /**
     * The company's outbound messages created since `since`, by account and status: one range of
     * messages_company_created_idx over that window (GET /channels's health reads the last hour).
     */
    async recentOutboundByAccount(companyId: string, since: number) {
      const rows = (await db.sql(sql.recentOutboundByAccount).all(companyId, since)) as {
        channel_account_id: string;
        status: string;
        n: number;
        last_sent: number | null;
      }[];
      return rows.map((r) => ({
        accountId: r.channel_account_id,
        status: r.status,
        count: Number(r.n),
        lastSentAt: r.last_sent === null ? null : Number(r.last_sent),
      }));
    },

    /**
     * Each account's newest failure among the company's newest `within` failed messages (GET /channels's
     * health): at most `within` entries of messages_company_failed_idx, one row per account back.
     */
    async lastFailures(companyId: string, within: number): Promise<Map<string, { failedAt: number | null; reason: string | null }>> {
      const rows = (await db.sql(sql.lastFailures).all(companyId, within)) as {
        channel_account_id: string;
        failed_at: number | null;
        error_reason: string | null;
      }[];
      return new Map(rows.map((r) => [r.channel_account_id, { failedAt: r.failed_at === null ? null : Number(r.failed_at), reason: r.error_reason }]));
    },

    /** Messages of both directions in these conversations. */
    async countInConversations(conversationIds: string[]): Promise<number> {
      if (!conversationIds.length) return 0;
      return ((await db.sql(sql.countIn).get(JSON.stringify(conversationIds))) as { n: number }).n;
    },

    /** Inbound messages in these conversations, counted up to `cap` (is this a contact's first?). */
    async countInboundIn(conversationIds: string[], cap: number): Promise<number> {
      if (!conversationIds.length) return 0;
      return ((await db.sql(sql.countInboundIn).get(JSON.stringify(conversationIds), cap)) as { n: number }).n;
    },
  };
}

export type MessagesStore = ReturnType<typeof createMessagesStore>;

/** GET /messages's filters (values checked by the route); `before` is the cursor's (createdAt, id). */
export type MessageListFilter = {
  status?: string;
  channel?: string;
  contactId?: string;
  /** With `contactId`: that contact's conversations (the service reads them from the conversations module). */
  contactConversationIds?: string[];
  campaignId?: string;
  conversationId?: string;
  from?: number;
  to?: number;
  before?: [number, string];
};

/**
 * GET /messages: a company's messages, newest first by (created_at, id). Each filter narrows through its own
 * index (messages.table.ts), the window and the cursor are a range of it, so a page reads about `limit` index
 * entries whatever the company holds; with several filters the planner takes the narrowest index and the
 * others are checked on its rows. A conversation filter sorts that conversation's messages (its index is by id).
 * Parameters are named by position: ?1 company, ?2 limit, then the filters in the order of MessageListFilter.
 */
export function listSQL(f: MessageListFilter, engine: Engine = "sqlite"): { text: string; args: unknown[] } {
  const where = ["company_id = ?1"];
  const args: unknown[] = [];
  const add = (cond: (p: string) => string, value: unknown) => {
    args.push(value);
    where.push(cond(`?${args.length + 2}`));
  };
  // Failed messages have a partial index of their own: the status is written out (a partial index serves only
  // a query that names its condition). Queued ones are the company's backlog (companyBacklog), then sorted:
  // what is queued, never the company's history (NB! `+company_id` on SQLite, or its planner walks
  // messages_company_created_idx for the order). Other statuses are checked on the company's rows as the walk
  // meets them.
  if (f.status === "failed") where.push(`status = 'failed'`);
  else if (f.status === "queued") {
    if (engine === "sqlite") where[0] = "+company_id = ?1";
    where.push(`status = 'queued' AND id IN (SELECT id FROM (${companyBacklog(engine, "m.id", "?1")}) b)`);
  } else if (f.status !== undefined) add((p) => `status = ${p}`, f.status);
  if (f.channel !== undefined) add((p) => `channel = ${p}`, f.channel);
  if (f.contactId !== undefined) add((p) => `contact_id = ${p}`, f.contactId);
  // A contact's messages are those of its conversations: ranges of messages_conversation_idx, then a sort of
  // that contact's messages alone (no index of messages by contact: each would be written by every message).
  // NB! `+company_id` on SQLite: otherwise its planner walks messages_company_created_idx for the order,
  // which is the company's whole history for a contact with few messages.
  if (f.contactConversationIds !== undefined) {
    if (engine === "sqlite") where[0] = "+company_id = ?1";
    add((p) => `conversation_id IN (${jsonValues(engine, p)})`, JSON.stringify(f.contactConversationIds));
  }
  if (f.campaignId !== undefined) add((p) => `campaign_id = ${p}`, f.campaignId);
  if (f.conversationId !== undefined) add((p) => `conversation_id = ${p}`, f.conversationId);
  if (f.from !== undefined) add((p) => `created_at >= ${p}`, f.from);
  if (f.to !== undefined) add((p) => `created_at < ${p}`, f.to);
  if (f.before) {
    // Said as a range on created_at first (an index range on both engines), then the tie on id.
    add((p) => `created_at <= ${p}`, f.before[0]);
    const at = `?${args.length + 2}`;
    add((p) => `(created_at < ${at} OR id < ${p})`, f.before[1]);
  }
  return { text: `SELECT * FROM messages WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?2`, args };
}

/** The store of a connection, built once. */
export const messagesStore = perConnection(createMessagesStore);

/** (For tests that read a message row by id; production code goes through the store.) */
export function messageById(db: Db, id: string): Promise<MessageRow | undefined> {
  return messagesStore(db).messageById(id);
}
