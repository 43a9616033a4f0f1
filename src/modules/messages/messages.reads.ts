/**
 * The read operations over a company's messages that are not one message: the list (GET /messages) and the
 * counts by status over time (GET /messages/stats). Rules here, SQL in messages.repository.ts.
 */
import type { Deps } from "../../deps";
import { AppError } from "../../platform/errors";
import { messagesStore, type MessageListFilter, type MessageRow } from "./messages.repository";

export function listMessages({ db, companyId, filter, limit }: { db: Deps["db"]; companyId: string; filter: MessageListFilter; limit: number }): MessageRow[] {
  return messagesStore(db).list({ companyId, filter, limit });
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
export function messageStats({ db, now, companyId, from, to, interval = "hour", channel }: { db: Deps["db"]; now: Date; companyId: string; from?: Date; to?: Date; interval?: StatsInterval; channel?: string }) {
  const size = STATS_INTERVALS[interval];
  // By default the window ends with the current bucket, so the last one is whole and counts what was just made.
  const end = to?.getTime() ?? (Math.floor(now.getTime() / size) + 1) * size;
  const begin = from?.getTime() ?? end - 24 * HOUR;
  if (begin >= end) throw invalid(from ? "from" : "to", "must be before to");
  if (end - begin > MAX_WINDOW) throw invalid("from", "the window is at most 31 days");
  const start = Math.floor(begin / size) * size;
  const buckets: Bucket[] = [];
  for (let at = start; at < end; at += size) buckets.push({ start: new Date(at).toISOString(), queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, received: 0, total: 0 });
  for (const r of messagesStore(db).countByBucket({ companyId, channel, start, size, from: begin, to: end })) {
    const b = buckets[r.bucket];
    if (!b) continue;
    if ((STATUSES as readonly string[]).includes(r.status)) b[r.status as (typeof STATUSES)[number]] += r.count;
    b.total += r.count;
  }
  return { interval, from: new Date(begin).toISOString(), to: new Date(end).toISOString(), buckets };
}
