/**
 * The leader lock's store (leader.ts): PostgreSQL's session advisory lock LEADER_LOCK, held on a connection
 * of its own — PostgreSQL releases it when that session ends. On SQLite there is none: one instance.
 */
import type { Db } from "../db/client";
import { PgConnection } from "../db/postgres/libpq";

export const LEADER_LOCK = 0x5357_0002; // "SW" 2

export interface LeaderLockStore {
  /** Whether this instance's session holds the lock now, taking it when it is free. Throws when the connection fails. */
  holdOrTake(): boolean;
  /** Ends the session (releasing the lock now rather than at process exit); the next holdOrTake opens a new one. */
  close(): void;
}

/** null: nothing to share the leadership with (SQLite, or PostgreSQL without a URL to open a session of its own). */
export function createLeaderLockStore({ db, url }: { db: Db; url?: string }): LeaderLockStore | null {
  if (db.engine !== "postgres" || !url) return null;
  let conn: PgConnection | null = null;
  // NB! The connection re-connects by itself after a drop (libpq.ts): a new session holds no lock, so every
  // step asks PostgreSQL whether this session holds it rather than trusting what an earlier step saw.
  const holds = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objid = ${LEADER_LOCK} AND objsubid = 1 AND pid = pg_backend_pid() AND granted)`;
  return {
    holdOrTake() {
      conn ??= new PgConnection(url);
      return conn.query(holds).rows[0]![0] === 1 || conn.query(`SELECT pg_try_advisory_lock(${LEADER_LOCK})`).rows[0]![0] === 1;
    },
    close() {
      conn?.close();
      conn = null;
    },
  };
}
