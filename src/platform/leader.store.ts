/**
 * The leader lock's store (leader.ts): PostgreSQL's session advisory lock LEADER_LOCK, held on a connection
 * of its own (Bun's client, one connection) — PostgreSQL releases it when that session ends. On SQLite there
 * is none: one instance.
 */
import { SQL } from "bun";
import type { Db } from "../db/client";

export const LEADER_LOCK = 0x5357_0002; // "SW" 2

export interface LeaderLockStore {
  /** Whether this instance's session holds the lock now, taking it when it is free. Rejects when the connection fails. */
  holdOrTake(): Promise<boolean>;
  /** Ends the session (releasing the lock now rather than at process exit); the next holdOrTake opens a new one. */
  close(): void;
}

/** null: nothing to share the leadership with (SQLite, or PostgreSQL without a URL to open a session of its own). */
export function createLeaderLockStore({ db, url, timeoutMs = 5000 }: { db: Pick<Db, "engine">; url?: string; timeoutMs?: number }): LeaderLockStore | null {
  if (db.engine !== "postgres" || !url) return null;
  let conn: SQL | null = null;
  // NB! Bun's client re-connects by itself after a drop: a new session holds no lock, so every step asks
  // PostgreSQL whether this session holds it rather than trusting what an earlier step saw.
  const holds = `SELECT (EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = ${LEADER_LOCK} AND objsubid = 1 AND pid = pg_backend_pid() AND granted)
       OR pg_try_advisory_lock(${LEADER_LOCK})) AS held`;
  const close = () => {
    void conn?.close({ timeout: 0 }).catch(() => {});
    conn = null;
  };
  return {
    async holdOrTake() {
      const own = (conn ??= new SQL(url, { max: 1, connectionTimeout: timeoutMs / 1000, connection: { application_name: "switchboard-leader" } }));
      let timer: ReturnType<typeof setTimeout> | undefined;
      // A black-holed network never answers: the step gives up, and the session is dropped (its lock with it,
      // once PostgreSQL notices).
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the leader lock's connection did not answer within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        const [row] = await Promise.race([own.unsafe(holds), deadline]);
        return row.held === true;
      } catch (e) {
        if (conn === own) close();
        throw e;
      } finally {
        clearTimeout(timer);
      }
    },
    close,
  };
}
