/**
 * The database's size on disk (/metrics, `switchboard_database_bytes`). SQLite: the file and its write-ahead
 * log in the data dir. PostgreSQL: the database (`pg_database_size`, which any role that may connect can
 * read); its write-ahead log belongs to the whole server, is shared by every database on it and readable only
 * by monitoring roles, so it is not reported — the server's own monitoring covers it.
 */
import { existsSync, statSync } from "node:fs";
import type { Db } from "./client";

export async function databaseBytes({ db, file }: { db: Db; file: string }): Promise<{ db: number; wal?: number }> {
  if (db.engine === "postgres") return { db: ((await db.sql("SELECT pg_database_size(current_database()) AS n").get()) as { n: number }).n };
  const size = (f: string) => (existsSync(f) ? statSync(f).size : 0);
  return { db: size(file), wal: size(`${file}-wal`) };
}
