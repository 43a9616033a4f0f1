import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The durable job table (outbox). Jobs are inserted in the same transaction as the business row that
 * causes them; a worker claims them with a lease + token and finalises only while it holds the token.
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
  (t) => [
    index("jobs_claim_idx").on(t.type, t.status, t.runAt),
    index("jobs_lease_idx").on(t.status, t.leaseUntil),
    // The loop's "when is the next job due" (min run_at of pending jobs, any type) reads one index entry.
    index("jobs_due_idx").on(t.status, t.runAt),
  ],
);
