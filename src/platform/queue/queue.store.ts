/**
 * The job loop's store (queue.ts): every read and write of the jobs table. Its statements are prepared once
 * per queue; texts differ by engine only where PostgreSQL needs it: claims skip rows another instance holds,
 * and JSON lists are expanded per engine. Functions take positional arguments (no object per call: the
 * claims and outcomes run for every job) and answer raw rows where the queue reads a few columns of them.
 * Every function answers a promise (the asynchronous store contract), but for the synchronous twins of
 * enqueue's path (`…Sync`, marked NB!).
 */
import { type Db, storeDb } from "../../db/client";
import { jsonValues, unplanned } from "../../db/dialect";
import type { JobRow } from "./queue.types";

/** A claimed job as the claims return it (RETURNING). */
export interface ClaimedJobRow {
  id: string;
  type: string;
  payload: string;
  attempts: number;
  max_attempts: number;
  group_key: string | null;
  run_at: number;
  lease_token: string;
}
/** A due job of an inline type (no lease). */
export type DueJobRow = Omit<ClaimedJobRow, "lease_token">;

export type QueueStore = ReturnType<typeof createQueueStore>;

export function createQueueStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const insertText = `INSERT INTO jobs (id, type, payload, status, run_at, attempts, max_attempts, group_key, created_at, updated_at)
     VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?)`;
  const insertClaimedText = `INSERT INTO jobs (id, type, payload, status, run_at, lease_until, lease_token, attempts, max_attempts, group_key, created_at, updated_at)
     VALUES (?1, ?2, ?3, 'running', ?4, ?4, ?5, 1, ?6, ?7, ?8, ?8)`;
  const cancelText = `DELETE FROM jobs WHERE id = ? AND status = 'pending'`;
  const listText = `SELECT * FROM jobs WHERE (CAST(?1 AS TEXT) IS NULL OR status = ?1) AND (CAST(?2 AS TEXT) IS NULL OR type = ?2) ORDER BY created_at DESC LIMIT ?3`;
  const retryText = `UPDATE jobs SET status = 'pending', attempts = 0, run_at = ?, last_error = NULL, updated_at = ? WHERE id = ? AND status = 'dead'`;
  // Parameters in LIMITs and in the equalities the index orders by are unplanned (dialect.ts): SQLite would
  // prepare these statements again on every call.
  const type1 = unplanned("?1", "TEXT");
  const insertStmt = db.sql(insertText);
  // A job handed straight to this process's workers (enqueue): stored already claimed, as a claim leaves it.
  const insertClaimedStmt = db.sql(insertClaimedText);
  // A held job that becomes a row (unhold): pending or dead, with the attempts it has spent.
  const insertRowStmt = db.sql(
    `INSERT INTO jobs (id, type, payload, status, run_at, attempts, max_attempts, group_key, last_error, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)`,
  );
  // PostgreSQL: other instances claim at the same time; a row one of them holds is skipped, not waited for.
  const skipLocked = db.engine === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
  const claimStmt = db.sql(
    `UPDATE jobs SET status = 'running', lease_until = ?1, run_at = ?1, lease_token = ?2, attempts = attempts + 1, updated_at = ?3
     WHERE id IN (
       SELECT id FROM (SELECT id FROM jobs WHERE type = ?4 AND status = 'running' AND run_at < ?3 LIMIT ${unplanned("?5", "INTEGER")}${skipLocked}) expired
       UNION ALL
       SELECT id FROM (SELECT id FROM jobs WHERE type = ${unplanned("?4", "TEXT")} AND status = 'pending' AND run_at <= ?3 ORDER BY run_at LIMIT ${unplanned("?5", "INTEGER")}${skipLocked}) due
       LIMIT ${unplanned("?5", "INTEGER")})
     RETURNING id, type, payload, attempts, max_attempts, group_key, run_at, lease_token`,
  );
  // NB! Expired leases and due jobs are two index searches joined by UNION ALL: an `OR` of the two makes
  // SQLite collect and sort every due row before the LIMIT, which is O(backlog) per claim.
  // A grouped type's scan: expired leases (a stopped process's jobs: few), then the groups that hold pending
  // jobs — a walk over the distinct keys of jobs_group_idx, O(groups) — each with its oldest run_at.
  const groupLegacyStmt = db.sql(`UPDATE jobs SET group_key = 'job:' || id WHERE type = ? AND group_key IS NULL`);
  const expiredStmt = db.sql(
    `SELECT id, group_key FROM jobs WHERE type = ?1 AND status = 'running' AND run_at < ?2 LIMIT ${unplanned("?3", "INTEGER")}${skipLocked}`,
  );
  const pendingGroupsStmt = db.sql(
    `WITH RECURSIVE g(k) AS (
       SELECT (SELECT group_key FROM jobs WHERE type = ${type1} AND status = 'pending' AND group_key IS NOT NULL ORDER BY group_key LIMIT 1)
       UNION ALL
       SELECT (SELECT group_key FROM jobs WHERE type = ${type1} AND status = 'pending' AND group_key IS NOT NULL AND group_key > g.k ORDER BY group_key LIMIT 1)
       FROM g WHERE g.k IS NOT NULL)
     SELECT k AS group_key, (SELECT min(run_at) FROM jobs WHERE type = ${type1} AND status = 'pending' AND group_key = g.k) AS first FROM g WHERE k IS NOT NULL`,
  );
  const groupDueStmt = db.sql(
    `SELECT id FROM jobs WHERE type = ${type1} AND group_key = ${unplanned("?2", "TEXT")} AND status = 'pending' AND group_key IS NOT NULL AND run_at <= ?3
     ORDER BY run_at LIMIT ${unplanned("?4", "INTEGER")}`,
  );
  // NB! The ids were picked without a lock: the row must still be claimable when the UPDATE reaches it. On
  // PostgreSQL two claims (units side by side, or two instances) may pick the same ids; the second UPDATE waits
  // for the first's row lock, then sees the claimed row (running, leased past ?3) and leaves it.
  const claimIdsStmt = db.sql(
    `UPDATE jobs SET status = 'running', lease_until = ?1, run_at = ?1, lease_token = ?2, attempts = attempts + 1, updated_at = ?3
     WHERE id IN (${jsonValues(db.engine, "?4")}) AND (status = 'pending' AND run_at <= ?3 OR status = 'running' AND run_at < ?3)
     RETURNING id, type, payload, attempts, max_attempts, group_key, run_at, lease_token`,
  );
  const deleteStmt = db.sql(`DELETE FROM jobs WHERE id = ? AND lease_token = ?`);
  const renewStmt = db.sql(`UPDATE jobs SET lease_until = ?1, run_at = ?1 WHERE id = ?2 AND lease_token = ?3 AND status = 'running'`);
  const rescheduleStmt = db.sql(
    `UPDATE jobs SET status = 'pending', run_at = ?, lease_until = NULL, lease_token = NULL, last_error = ?,
       attempts = attempts - ?, updated_at = ?, payload = coalesce(?, payload) WHERE id = ? AND lease_token = ?`,
  );
  const deadStmt = db.sql(
    `UPDATE jobs SET status = 'dead', lease_until = NULL, lease_token = NULL, last_error = ?, updated_at = ? WHERE id = ? AND lease_token = ?`,
  );
  const releaseStmt = db.sql(
    `UPDATE jobs SET status = 'pending', run_at = ?1, lease_until = NULL, lease_token = NULL, attempts = attempts - 1, updated_at = ?1 WHERE id = ?2 AND lease_token = ?3`,
  );
  const cancelStmt = db.sql(cancelText);
  // An inline type's due jobs run in the unit that reads them. PostgreSQL: another unit (of this instance or
  // another) may run that type's jobs at the same time: the rows are locked until this unit ends, and skipped
  // by the other, so no job runs twice.
  const dueStmt = db.sql(
    `SELECT id, type, payload, attempts, max_attempts, group_key, run_at FROM jobs WHERE type = ${type1} AND status = 'pending' AND run_at <= ?2
     ORDER BY run_at LIMIT ${unplanned("?3", "INTEGER")}${skipLocked}`,
  );
  // An inline type's row is only ever `running` if a claiming version of the appliance held it when it stopped.
  const inlineExpiredStmt = db.sql(
    `UPDATE jobs SET status = 'pending', lease_until = NULL, lease_token = NULL, run_at = ?1 WHERE type = ?2 AND status = 'running' AND run_at < ?1`,
  );
  const inlineDeleteStmt = db.sql(`DELETE FROM jobs WHERE id IN (${jsonValues(db.engine)})`);
  // (payload: a new one, or null to keep it: JobOutcome's `payload`)
  const inlineRescheduleStmt = db.sql(
    `UPDATE jobs SET run_at = ?, last_error = ?, attempts = attempts + ?, updated_at = ?, payload = coalesce(?, payload) WHERE id = ?`,
  );
  const inlineDeadStmt = db.sql(`UPDATE jobs SET status = 'dead', attempts = attempts + 1, last_error = ?, updated_at = ? WHERE id = ?`);
  const nextDueOfTypeStmt = db.sql(`SELECT min(run_at) AS t FROM jobs WHERE type = ${type1} AND status = 'pending'`);

  const toJobRow = (r: Record<string, unknown>): JobRow => ({
    id: r.id as string,
    type: r.type as string,
    status: r.status as string,
    attempts: r.attempts as number,
    maxAttempts: r.max_attempts as number,
    runAt: new Date(r.run_at as number).toISOString(),
    lastError: (r.last_error as string) ?? null,
    payload: JSON.parse(r.payload as string),
    createdAt: new Date(r.created_at as number).toISOString(),
  });

  return {
    // Enqueue
    async insertPending(id: string, type: string, payload: string, runAt: number, maxAttempts: number, groupKey: string | null, t: number): Promise<void> {
      await insertStmt.run(id, type, payload, runAt, maxAttempts, groupKey, t, t);
    },
    /** A job stored as claimed by this process (hand-over): leased until `leaseUntil` under `token`. */
    async insertClaimed(
      id: string,
      type: string,
      payload: string,
      leaseUntil: number,
      token: string,
      maxAttempts: number,
      groupKey: string | null,
      t: number,
    ): Promise<void> {
      await insertClaimedStmt.run(id, type, payload, leaseUntil, token, maxAttempts, groupKey, t);
    },
    /** A job leaving its anchor's row (unhold) as a jobs row: `status` pending or dead. */
    async insertUnheld(
      id: string,
      type: string,
      payload: string,
      status: string,
      runAt: number,
      attempts: number,
      maxAttempts: number,
      groupKey: string | null,
      error: string | null,
      t: number,
    ): Promise<void> {
      await insertRowStmt.run(id, type, payload, status, runAt, attempts, maxAttempts, groupKey, error, t);
    },
    /** Deletes a job that has not started; false when it is running, dead or gone. */
    cancelPending: async (id: string): Promise<boolean> => (await cancelStmt.run(id)).changes > 0,

    // Claims
    /** Up to `limit` jobs of a type whose lease expired or that are due by `t`, leased until `leaseUntil`. */
    claimDue: async (leaseUntil: number, token: string, t: number, type: string, limit: number): Promise<ClaimedJobRow[]> =>
      (await claimStmt.all(leaseUntil, token, t, type, limit)) as unknown as ClaimedJobRow[],
    /** The jobs with these ids (`idsJson`: a JSON array), leased until `leaseUntil`. */
    claimIds: async (leaseUntil: number, token: string, t: number, idsJson: string): Promise<ClaimedJobRow[]> =>
      (await claimIdsStmt.all(leaseUntil, token, t, idsJson)) as unknown as ClaimedJobRow[],
    /** A grouped type's rows without a group (an older version enqueued them so) get one of their own. */
    async groupUngrouped(type: string): Promise<void> {
      await groupLegacyStmt.run(type);
    },
    /** Running jobs of a type whose lease expired before `t` (PostgreSQL: not locked ones). */
    expiredLeases: async (type: string, t: number, limit: number) => (await expiredStmt.all(type, t, limit)) as { id: string; group_key: string | null }[],
    /** Every group of a type with pending jobs, with its earliest run_at. */
    pendingGroups: async (type: string) => (await pendingGroupsStmt.all(type)) as { group_key: string; first: number }[],
    /** The ids of a group's jobs due by `t`, oldest first. */
    groupDueIds: async (type: string, group: string, t: number, limit: number) => (await groupDueStmt.all(type, group, t, limit)) as { id: string }[],
    /** The earliest run_at of a type's pending jobs, or null. */
    nextDueOfType: async (type: string): Promise<number | null> => ((await nextDueOfTypeStmt.get(type)) as { t: number | null }).t,

    // Outcomes, fenced by the lease token
    /** Moves a lease on to `until`; false when `token` no longer holds the job. */
    renewLease: async (until: number, id: string, token: string): Promise<boolean> => (await renewStmt.run(until, id, token)).changes > 0,
    async deleteDone(id: string, token: string): Promise<void> {
      await deleteStmt.run(id, token);
    },
    /** Pending again at `runAt`; `uncount` (0 or 1) attempts given back; `payload` null keeps the job's. */
    async reschedule(runAt: number, error: string | null, uncount: number, t: number, payload: string | null, id: string, token: string): Promise<void> {
      await rescheduleStmt.run(runAt, error, uncount, t, payload, id, token);
    },
    async markDead(error: string, t: number, id: string, token: string): Promise<void> {
      await deadStmt.run(error, t, id, token);
    },
    /** Gives a claimed job back, due at `t`, its attempt not counted. */
    async release(t: number, id: string, token: string): Promise<void> {
      await releaseStmt.run(t, id, token);
    },

    // Inline types (no lease: run inside the transaction that takes them)
    dueInline: async (type: string, t: number, limit: number) => (await dueStmt.all(type, t, limit)) as unknown as DueJobRow[],
    /** Rows of an inline type left running by a claiming version of the appliance: pending again. */
    async requeueExpiredInline(t: number, type: string): Promise<void> {
      await inlineExpiredStmt.run(t, type);
    },
    /** Inline jobs done: their rows removed together. */
    async deleteInline(ids: string[]): Promise<void> {
      await inlineDeleteStmt.run(JSON.stringify(ids));
    },
    /** Due again at `runAt`, `counted` (0 or 1) attempts added; `payload` null keeps the job's. */
    async rescheduleInline(runAt: number, error: string | null, counted: number, t: number, payload: string | null, id: string): Promise<void> {
      await inlineRescheduleStmt.run(runAt, error, counted, t, payload, id);
    },
    async markInlineDead(error: string, t: number, id: string): Promise<void> {
      await inlineDeadStmt.run(error, t, id);
    },

    // Operators (CLI, start-up, stats)
    /** Every running job back to pending, due at `t`, its attempt not counted; returns how many. */
    releaseAllRunning: async (t: number): Promise<number> =>
      (
        await db
          .sql(
            `UPDATE jobs SET status = 'pending', run_at = ?1, lease_until = NULL, lease_token = NULL, attempts = max(attempts - 1, 0), updated_at = ?1 WHERE status = 'running'`,
          )
          .run(t)
      ).changes,
    /** Newest first; `status`/`type` null: any. */
    async list(status: string | null, type: string | null, limit: number): Promise<JobRow[]> {
      return (await db.sql(listText).all(status, type, limit)).map(toJobRow);
    },
    /** A dead job pending again, due at `t`, its attempts from zero; false when there is no such dead job. */
    retryDead: async (id: string, t: number): Promise<boolean> => (await db.sql(retryText).run(t, t, id)).changes > 0,
    countsByTypeAndStatus: async () =>
      (await db.sql(`SELECT type, status, count(*) AS n FROM jobs GROUP BY type, status`).all()) as { type: string; status: string; n: number }[],
  };
}
