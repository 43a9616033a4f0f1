/**
 * The read operations over a company's messages that are not one message: the list (GET /messages) and the
 * counts by status over time (GET /messages/stats). Rules here, SQL in messages.repository.ts.
 */
import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { messagesStore, type MessageListFilter, type MessageRow } from "./messages.repository";
import { conversationsOfContacts } from "../conversations/conversations.service";

export async function listMessages({
  db,
  companyId,
  filter,
  limit,
}: {
  db: Db;
  companyId: string;
  filter: MessageListFilter;
  limit: number;
}): Promise<MessageRow[]> {
  const contactConversationIds = filter.contactId === undefined ? undefined : await conversationsOfContacts({ db, contactIds: [filter.contactId] });
  if (contactConversationIds?.length === 0) return [];
  return messagesStore(db).list({ companyId, filter: { ...filter, contactConversationIds }, limit });
}

const HOUR = 3_600_000;
export const STATS_INTERVALS = { hour: HOUR, day: 24 * HOUR } as const;
export type StatsInterval = keyof typeof STATS_INTERVALS;
/** The widest window: 31 days (744 hourly buckets). */
const MAX_WINDOW = 31 * 24 * HOUR;
const STATUSES = ["queued", "sent", "delivered", "read", "failed", "received"] as const;
type Bucket = { start: string; total: number } & Record<(typeof STATUSES)[number], number>;

const invalid = (name: string, message: string) => new AppError("VALIDATION_FAILED", `${name} ${message}`, [{ pointer: `query:${name}`, message }]);

/**
 * Messages created in [from, to) by UTC hour or day and current status. Defaults: the 24 hours up to the end of the current bucket.
 * Buckets start on the interval's boundary (the first may begin before `from`, counting from `from` only);
 * every bucket is listed, empty ones as zeros, so a chart needs no gap filling.
 */
export async function messageStats({
  db,
  now,
  companyId,
  from,
  to,
  interval = "hour",
  channel,
}: {
  db: Db;
  now: Date;
  companyId: string;
  from?: Date;
  to?: Date;
  interval?: StatsInterval;
  channel?: string;
}) {
  const size = STATS_INTERVALS[interval];
  // By default the window ends with the current bucket, so the last one is whole and counts what was just made.
  const end = to?.getTime() ?? (Math.floor(now.getTime() / size) + 1) * size;
  const begin = from?.getTime() ?? end - 24 * HOUR;
  if (begin >= end) throw invalid(from ? "from" : "to", "must be before to");
  if (end - begin > MAX_WINDOW) throw invalid("from", "the window is at most 31 days");
  const start = Math.floor(begin / size) * size;
  const buckets: Bucket[] = [];
  for (let at = start; at < end; at += size)
    buckets.push({ start: new Date(at).toISOString(), queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, received: 0, total: 0 });
  for (const r of await messagesStore(db).countByBucket({ companyId, channel, start, size, from: begin, to: end })) {
    const b = buckets[r.bucket];
    if (!b) continue;
    if ((STATUSES as readonly string[]).includes(r.status)) b[r.status as (typeof STATUSES)[number]] += r.count;
    b.total += r.count;
  }
  return { interval, from: new Date(begin).toISOString(), to: new Date(end).toISOString(), buckets };
}

/**
 * The company's own backlog (GET /messages/backlog). Jobs carry no company (the jobs table is the appliance's),
 * so this is what can be said of the company's rows: its queued messages — each is its own dispatch job or
 * has one — by channel with the oldest one's age, and the messages that failed in the last 24 hours (a
 * dispatch that ran out of attempts fails its message, so a company's dead sends are among them).
 */
export async function messageBacklog({ db, now, companyId }: { db: Db; now: Date; companyId: string }) {
  const store = messagesStore(db);
  const { byChannel, oldest } = await store.queuedByChannel(companyId);
  const failedLast24h = await store.countFailedSince(companyId, now.getTime() - 24 * HOUR);
  return {
    queued: { total: Object.values(byChannel).reduce((a, b) => a + b, 0), byChannel, oldestCreatedAt: oldest === null ? null : new Date(oldest).toISOString() },
    failedLast24h,
  };
}

export type AccountHealth = {
  status: "ok" | "degraded" | "failing" | "unknown";
  lastSentAt: string | null;
  lastFailedAt: string | null;
  lastFailureReason: string | null;
  recentSent: number;
  recentFailed: number;
};
/** A failure share at or above this over the last hour makes an account degraded. */
const DEGRADED_SHARE = 0.1;
/** How many of the company's newest failed messages are searched for an account's last failure. */
const FAILURE_LOOKBACK = 1000;

/**
 * Each account's health from its last hour of sends (GET /channels): sent (sent, delivered or read) and
 * failed counts, `failing` when every finished send failed, `degraded` when ≥ 10 % did, `unknown` without a
 * finished send in the hour. One range of messages_company_created_idx over the hour, plus the last failure among the company's newest 1,000 failed messages.
 */
export async function channelHealth({
  db,
  now,
  companyId,
  accounts,
}: {
  db: Db;
  now: Date;
  companyId: string;
  accounts: { id: string; channel: string }[];
}): Promise<Map<string, AccountHealth>> {
  const store = messagesStore(db);
  const since = now.getTime() - HOUR;
  const out = new Map<string, AccountHealth>();
  for (const a of accounts) out.set(a.id, { status: "unknown", lastSentAt: null, lastFailedAt: null, lastFailureReason: null, recentSent: 0, recentFailed: 0 });
  for (const r of await store.recentOutboundByAccount(companyId, since)) {
    const h = out.get(r.accountId);
    if (!h) continue;
    if (r.status === "failed") h.recentFailed += r.count;
    // (not those still waiting: queued, scheduled — nor canceled ones)
    else if (r.status === "sent" || r.status === "delivered" || r.status === "read") h.recentSent += r.count;
    if (r.lastSentAt !== null && (h.lastSentAt === null || r.lastSentAt > Date.parse(h.lastSentAt))) h.lastSentAt = new Date(r.lastSentAt).toISOString();
  }
  const failures = await store.lastFailures(companyId, FAILURE_LOOKBACK);
  for (const [id, h] of out) {
    const f = failures.get(id);
    if (f) {
      h.lastFailedAt = f.failedAt === null ? null : new Date(f.failedAt).toISOString();
      h.lastFailureReason = f.reason;
    }
    const finished = h.recentSent + h.recentFailed;
    h.status = finished === 0 ? "unknown" : h.recentSent === 0 ? "failing" : h.recentFailed / finished >= DEGRADED_SHARE ? "degraded" : "ok";
  }
  return out;
}
