import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The durable job table (outbox). Jobs are inserted in the same transaction as the business row that
 * causes them; a worker claims them with a lease + token and finalises only while it holds the token.
 * `run_at`: when a pending job is due; for a running job, when its lease expires (= `lease_until`).
 * Done jobs are deleted; dead jobs stay (listable, retryable with `switchboard jobs retry`).
 */
export const jobs = sqliteTable(
  "jobs",
  {
    id: text("id").primaryKey(),
    type: text("type").notNull(),
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    /** pending | running | dead */
    status: text("status").notNull(),
    runAt: integer("run_at").notNull(),
    attempts: integer("attempts").notNull().default(0),
    maxAttempts: integer("max_attempts").notNull(),
    leaseUntil: integer("lease_until"),
    leaseToken: text("lease_token"),
    /** Optional group (e.g. a webhook endpoint) for handlers that limit concurrency per group. */
    groupKey: text("group_key"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  // One index for all: a claim moves a row to `running` with run_at = its lease expiry, so due jobs, expired
  // leases and "when is the next job of a type due" are all searches of it. Every index more costs each of
  // the job writes of a sent message (a lease and a due-time index were dropped for that).
  // A partial index for grouped jobs only (webhook deliveries, campaign runs): when a group frees a slot, its
  // next due job is found at once, however large the backlog of other (full) groups ahead of it.
  (t) => [
    index("jobs_claim_idx").on(t.type, t.status, t.runAt),
    index("jobs_group_idx").on(t.type, t.groupKey, t.runAt).where(sql`status = 'pending' AND group_key IS NOT NULL`),
  ],
);
