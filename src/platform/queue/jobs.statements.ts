/**
 * The job loop's statements (queue.ts), prepared once per queue. Texts differ by engine only where PostgreSQL
 * needs it: claims skip rows another instance holds, and JSON lists are expanded per engine.
 */
import type { Database } from "bun:sqlite";
import { jsonValues, unplanned, type Engine } from "../../db/dialect";

export function jobStatements(sqlite: Database, engine: Engine) {
  // Parameters in LIMITs and in the equalities the index orders by are unplanned (dialect.ts): SQLite would
  // prepare these statements again on every call.
  const type1 = unplanned("?1", "TEXT");
  const insertStmt = sqlite.prepare(
    `INSERT INTO jobs (id, type, payload, status, run_at, attempts, max_attempts, group_key, created_at, updated_at)
     VALUES (?, ?, ?, 'pending', ?, 0, ?, ?, ?, ?)`,
  );
  // A job handed straight to this process's workers (enqueue): stored already claimed, as a claim leaves it.
  const insertClaimedStmt = sqlite.prepare(
    `INSERT INTO jobs (id, type, payload, status, run_at, lease_until, lease_token, attempts, max_attempts, group_key, created_at, updated_at)
     VALUES (?1, ?2, ?3, 'running', ?4, ?4, ?5, 1, ?6, ?7, ?8, ?8)`,
  );
  // A held job that becomes a row (unhold): pending or dead, with the attempts it has spent.
  const insertRowStmt = sqlite.prepare(
    `INSERT INTO jobs (id, type, payload, status, run_at, attempts, max_attempts, group_key, last_error, created_at, updated_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)`,
  );
  // PostgreSQL: other instances claim at the same time; a row one of them holds is skipped, not waited for.
  const skipLocked = engine === "postgres" ? " FOR UPDATE SKIP LOCKED" : "";
  const claimStmt = sqlite.prepare(
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
  const groupLegacyStmt = sqlite.prepare(`UPDATE jobs SET group_key = 'job:' || id WHERE type = ? AND group_key IS NULL`);
  const expiredStmt = sqlite.prepare(`SELECT id, group_key FROM jobs WHERE type = ?1 AND status = 'running' AND run_at < ?2 LIMIT ${unplanned("?3", "INTEGER")}${skipLocked}`);
  const pendingGroupsStmt = sqlite.prepare(
    `WITH RECURSIVE g(k) AS (
       SELECT (SELECT group_key FROM jobs WHERE type = ${type1} AND status = 'pending' AND group_key IS NOT NULL ORDER BY group_key LIMIT 1)
       UNION ALL
       SELECT (SELECT group_key FROM jobs WHERE type = ${type1} AND status = 'pending' AND group_key IS NOT NULL AND group_key > g.k ORDER BY group_key LIMIT 1)
       FROM g WHERE g.k IS NOT NULL)
     SELECT k AS group_key, (SELECT min(run_at) FROM jobs WHERE type = ${type1} AND status = 'pending' AND group_key = g.k) AS first FROM g WHERE k IS NOT NULL`,
  );
  const groupDueStmt = sqlite.prepare(
    `SELECT id FROM jobs WHERE type = ${type1} AND group_key = ${unplanned("?2", "TEXT")} AND status = 'pending' AND group_key IS NOT NULL AND run_at <= ?3
     ORDER BY run_at LIMIT ${unplanned("?4", "INTEGER")}`,
  );
  const claimIdsStmt = sqlite.prepare(
    `UPDATE jobs SET status = 'running', lease_until = ?1, run_at = ?1, lease_token = ?2, attempts = attempts + 1, updated_at = ?3
     WHERE id IN (${jsonValues(engine, "?4")})
     RETURNING id, type, payload, attempts, max_attempts, group_key, run_at, lease_token`,
  );
  const deleteStmt = sqlite.prepare(`DELETE FROM jobs WHERE id = ? AND lease_token = ?`);
  const renewStmt = sqlite.prepare(`UPDATE jobs SET lease_until = ?1, run_at = ?1 WHERE id = ?2 AND lease_token = ?3 AND status = 'running'`);
  const rescheduleStmt = sqlite.prepare(
    `UPDATE jobs SET status = 'pending', run_at = ?, lease_until = NULL, lease_token = NULL, last_error = ?,
       attempts = attempts - ?, updated_at = ?, payload = coalesce(?, payload) WHERE id = ? AND lease_token = ?`,
  );
  const deadStmt = sqlite.prepare(
    `UPDATE jobs SET status = 'dead', lease_until = NULL, lease_token = NULL, last_error = ?, updated_at = ? WHERE id = ? AND lease_token = ?`,
  );
  const releaseStmt = sqlite.prepare(
    `UPDATE jobs SET status = 'pending', run_at = ?1, lease_until = NULL, lease_token = NULL, attempts = attempts - 1, updated_at = ?1 WHERE id = ?2 AND lease_token = ?3`,
  );
  const cancelStmt = sqlite.prepare(`DELETE FROM jobs WHERE id = ? AND status = 'pending'`);
  const dueStmt = sqlite.prepare(
    `SELECT id, type, payload, attempts, max_attempts, group_key, run_at FROM jobs WHERE type = ${type1} AND status = 'pending' AND run_at <= ?2
     ORDER BY run_at LIMIT ${unplanned("?3", "INTEGER")}`,
  );
  // An inline type's row is only ever `running` if a claiming version of the appliance held it when it stopped.
  const inlineExpiredStmt = sqlite.prepare(
    `UPDATE jobs SET status = 'pending', lease_until = NULL, lease_token = NULL, run_at = ?1 WHERE type = ?2 AND status = 'running' AND run_at < ?1`,
  );
  const inlineDeleteStmt = sqlite.prepare(`DELETE FROM jobs WHERE id = ?`);
  // (payload: a new one, or null to keep it: JobOutcome's `payload`)
  const inlineRescheduleStmt = sqlite.prepare(`UPDATE jobs SET run_at = ?, last_error = ?, attempts = attempts + ?, updated_at = ?, payload = coalesce(?, payload) WHERE id = ?`);
  const inlineDeadStmt = sqlite.prepare(`UPDATE jobs SET status = 'dead', attempts = attempts + 1, last_error = ?, updated_at = ? WHERE id = ?`);
  const nextDueOfTypeStmt = sqlite.prepare(`SELECT min(run_at) AS t FROM jobs WHERE type = ${type1} AND status = 'pending'`);
  return {
    insertStmt, insertClaimedStmt, insertRowStmt, claimStmt, groupLegacyStmt, expiredStmt, pendingGroupsStmt,
    groupDueStmt, claimIdsStmt, deleteStmt, renewStmt, rescheduleStmt, deadStmt, releaseStmt, cancelStmt,
    dueStmt, inlineExpiredStmt, inlineDeleteStmt, inlineRescheduleStmt, inlineDeadStmt, nextDueOfTypeStmt,
  };
}
