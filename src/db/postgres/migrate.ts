/**
 * Applies the PostgreSQL migrations embedded in the binary (migrations-pg/, generated from the same
 * *.table.ts as SQLite's). Several instances may start at once: the session advisory lock MIGRATE_LOCK lets
 * one migrate while the others wait, then find nothing pending. All pending migrations run in one
 * transaction (PostgreSQL's DDL is transactional): a failed migration leaves the old schema.
 * No backup is taken here: a PostgreSQL is backed up by its own tools (docs/operations.md).
 */
import { SQL } from "bun";
import type { Db } from "../client";
import { SchemaTooNewError } from "../migrate";
import { embeddedPgMigrations } from "./migrations.gen";

export const MIGRATE_LOCK = 0x5357_0003; // "SW" 3

export function migratePostgres(db: Db, { version }: { version: string }): { applied: number } {
  const client = db.$client;
  // Keyset pagination and every ORDER BY on text expect SQLite's byte order; other collations sort by locale.
  const collation = (client.query("SELECT datcollate AS c FROM pg_database WHERE datname = current_database()").get() as { c: string }).c;
  if (collation !== "C" && collation !== "POSIX")
    throw new Error(
      `the PostgreSQL database sorts text by the locale "${collation}"; Switchboard needs byte order: create it with CREATE DATABASE … TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C' (docs/operations.md, "PostgreSQL")`,
    );
  client.exec(`SELECT pg_advisory_lock(${MIGRATE_LOCK})`);
  try {
    client.exec(`CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id serial PRIMARY KEY, hash text NOT NULL, created_at bigint NOT NULL)`);
    const newest = (client.query(`SELECT coalesce(max(created_at), 0) AS t FROM "__drizzle_migrations"`).get() as { t: number }).t;
    const known = embeddedPgMigrations.at(-1)?.folderMillis ?? 0;
    if (newest > known)
      throw new SchemaTooNewError(`the PostgreSQL database was migrated by a newer Switchboard than this binary (${version}): run that version or newer`);
    const pending = embeddedPgMigrations.filter((m) => m.folderMillis > newest);
    if (!pending.length) return { applied: 0 };
    // Not db.tx: its write lock and data-version bookkeeping need the tables these migrations create.
    client.exec("BEGIN");
    try {
      for (const m of pending) {
        for (const statement of m.sql) if (statement.trim()) client.exec(statement);
        client.query(`INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)`).run(m.hash, m.folderMillis);
      }
      client.exec("COMMIT");
    } catch (e) {
      client.exec("ROLLBACK");
      throw e;
    }
    return { applied: pending.length };
  } finally {
    client.exec(`SELECT pg_advisory_unlock(${MIGRATE_LOCK})`);
  }
}

/**
 * `migratePostgres` on Bun's client (the engine of engine.ts): the same steps on one connection of its own,
 * which holds the session lock. NB! The statements go as written — not through the pool's portable-SQL
 * rewrite, which would read a `?` inside a function body (`$fold$ … (?<= … $fold$`, 0005) as a parameter.
 */
export async function migratePostgresAsync(url: string, { version }: { version: string }): Promise<{ applied: number }> {
  const sql = new SQL(url, { max: 1, connection: { client_min_messages: "warning" } });
  try {
    const [{ c: collation }] = await sql`SELECT datcollate AS c FROM pg_database WHERE datname = current_database()`;
    if (collation !== "C" && collation !== "POSIX")
      throw new Error(
        `the PostgreSQL database sorts text by the locale "${collation}"; Switchboard needs byte order: create it with CREATE DATABASE … TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C' (docs/operations.md, "PostgreSQL")`,
      );
    await sql`SELECT pg_advisory_lock(${MIGRATE_LOCK})`;
    try {
      await sql.unsafe(`CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id serial PRIMARY KEY, hash text NOT NULL, created_at bigint NOT NULL)`);
      const [{ t }] = await sql`SELECT coalesce(max(created_at), 0)::float8 AS t FROM "__drizzle_migrations"`;
      const newest = Number(t);
      const known = embeddedPgMigrations.at(-1)?.folderMillis ?? 0;
      if (newest > known)
        throw new SchemaTooNewError(`the PostgreSQL database was migrated by a newer Switchboard than this binary (${version}): run that version or newer`);
      const pending = embeddedPgMigrations.filter((m) => m.folderMillis > newest);
      if (!pending.length) return { applied: 0 };
      await sql.begin(async (tx) => {
        for (const m of pending) {
          for (const statement of m.sql) if (statement.trim()) await tx.unsafe(statement);
          await tx`INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`;
        }
      });
      return { applied: pending.length };
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATE_LOCK})`;
    }
  } finally {
    await sql.close({ timeout: 0 });
  }
}
