/**
 * `switchboard migrate-to-postgres [--to URL|env:NAME|file:PATH] [--config PATH] [--json]` (offline): copies
 * the SQLite database of the config's data dir into a PostgreSQL database, which the appliance then runs on
 * with `[storage] driver = "postgres"` (docs/operations.md, "Moving an existing appliance to PostgreSQL").
 *
 * The target defaults to the config's `[storage] url`, so an operator may either name it with `--to` (the
 * forms `[storage] url` accepts) or change the config first and run the command without it.
 *
 * What it does, in order; each step refuses rather than guesses, naming the table or flag:
 * 1. Locks the SQLite file exclusively (not waited for) and keeps the lock to the end: a running `serve`
 *    makes it refuse, and a `serve` started meanwhile cannot write what would then be left behind.
 * 2. The SQLite schema must be this binary's (no pending migrations, not newer).
 * 3. Migrates the target (migratePostgresAsync), then compares the two schemas: every SQLite table and column must
 *    exist in PostgreSQL and vice versa, except the known one-engine tables (SQLITE_ONLY, POSTGRES_ONLY in
 *    migrate-to-postgres.copy.ts). Unknown is an error.
 * 4. In ONE PostgreSQL transaction holding the appliance's write lock: refuses a target with any row,
 *    copies every table parents first (foreign keys are dropped for the copy and added back after it, with
 *    the non-unique indexes: deferIndexesAndForeignKeys), verifies the row count of each table against
 *    SQLite, sets every sequence owned by a copied column (contacts_seq_seq) to the column's maximum, commits.
 *
 * The copy (step 4) is migrate-to-postgres.copy.ts; its value encoding, migrate-to-postgres.encode.ts.
 */
import { existsSync, readFileSync } from "node:fs";
import { databasePath } from "../config/config.schema";
import { Database } from "bun:sqlite";
import type { Config } from "../config/config.schema";
import type { Db } from "../db/client";
import { openPostgres } from "../db/postgres/engine";
import { schemaState, SchemaTooNewError } from "../db/migrate";
import { migratePostgresAsync } from "../db/postgres/migrate";
import { VERSION } from "../version";
import { loadCliConfig, parse, print, UsageError } from "./cli.util";
import { copySqliteToPostgres, type MigrationSummary, type ProgressListener } from "./migrate-to-postgres.copy";

const USAGE = "switchboard migrate-to-postgres [--to URL|env:NAME|file:PATH] [--config PATH] [--json]";
export async function migrateToPostgresCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { to: { type: "string" }, json: { type: "boolean" } }, USAGE);
  const config = loadCliConfig(values.config);
  const url = targetUrl(values.to, config);
  const out = await migrateToPostgres({ sourcePath: databasePath(config), url, onProgress: progressPrinter(!values.json && process.stderr.isTTY === true) });
  print(values.json, out, summaryText(out));
}

export type MigrationResult = MigrationSummary & { source: string; target: string; migrationsApplied: number; rowsPerSecond: number };

/** The whole command after its flags: the SQLite file at `sourcePath` into the PostgreSQL at `url`. */
export async function migrateToPostgres({
  sourcePath,
  url,
  onProgress,
}: {
  sourcePath: string;
  url: string;
  onProgress?: ProgressListener;
}): Promise<MigrationResult> {
  if (!existsSync(sourcePath)) throw new UsageError(`no SQLite database at ${sourcePath} (the config's [storage] data_dir): nothing to migrate`);
  const sqlite = lockSource(sourcePath);
  try {
    const schema = schemaState(sqlite);
    if (!schema.applied) throw new UsageError(`${sourcePath} is not a Switchboard database (no migration history); nothing was copied`);
    if (schema.newer)
      throw new UsageError(`${sourcePath} was written by a newer Switchboard than this one (${VERSION}): run migrate-to-postgres with that version`);
    if (schema.pending)
      throw new UsageError(
        `${sourcePath} has ${schema.pending} pending migration(s): bring it to this version's schema first (run "switchboard migrate" with [storage] driver = "sqlite", or start and stop the service once), then run migrate-to-postgres again`,
      );

    const db = await connectTarget(url);
    try {
      let applied: number;
      try {
        ({ applied } = await migratePostgresAsync(url, { version: VERSION }));
      } catch (e) {
        if (e instanceof SchemaTooNewError) throw e;
        throw new UsageError(`migrating the PostgreSQL database (${redactUrl(url)}) failed: ${(e as Error).message}`);
      }
      const summary = await copySqliteToPostgres({ sqlite, db, onProgress });
      return {
        source: sourcePath,
        target: redactUrl(url),
        migrationsApplied: applied,
        ...summary,
        rowsPerSecond: Math.round(summary.rows / Math.max(summary.ms / 1000, 0.001)),
      };
    } finally {
      db.close();
    }
  } finally {
    sqlite.close(); // releases the exclusive lock
  }
}

/** `--to` (a URL, `env:NAME` or `file:PATH`), else the config's `[storage] url` (already resolved by loadConfig). */
function targetUrl(flag: string | undefined, config: Config): string {
  let url: string;
  let shown: string;
  if (flag === undefined || flag === "") {
    if (!config.storage.url)
      throw new UsageError(
        `--to is required (the PostgreSQL database to copy into: postgres://…, env:NAME or file:PATH) unless the config sets [storage] url (usage: ${USAGE})`,
      );
    return config.storage.url;
  }
  if (flag.startsWith("env:")) {
    const name = flag.slice(4);
    const value = process.env[name];
    if (value === undefined || value === "") throw new UsageError(`--to refers to environment variable ${name}, which is not set`);
    [url, shown] = [value, `environment variable ${name}`];
  } else if (flag.startsWith("file:")) {
    const file = flag.slice(5);
    try {
      url = readFileSync(file, "utf8").replace(/\r?\n$/, "");
    } catch {
      throw new UsageError(`--to refers to file ${file}, which cannot be read`);
    }
    shown = `file ${file}`;
  } else [url, shown] = [flag, "it"];
  if (!/^postgres(ql)?:\/\//.test(url)) {
    const start = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(url)?.[0];
    throw new UsageError(
      `--to is not a PostgreSQL URL (${shown} ${start ? `starts with "${start}"` : "has no postgres:// scheme"}): expected postgres://user@host:5432/database, or env:NAME / file:PATH holding one`,
    );
  }
  return url;
}

/** The URL without its password, for messages and the summary. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, "//$1:***@");
  }
}

/** The source, opened read-write only to hold an exclusive lock (nothing is written) until it is closed. */
function lockSource(path: string): Database {
  let sqlite: Database;
  try {
    sqlite = new Database(path, { readwrite: true, safeIntegers: true });
  } catch (e) {
    throw new UsageError(`${path} cannot be opened (${(e as Error).message})`);
  }
  try {
    sqlite.exec("PRAGMA busy_timeout = 0");
    sqlite.exec("PRAGMA locking_mode = EXCLUSIVE");
    sqlite.exec("BEGIN EXCLUSIVE");
  } catch (e) {
    sqlite.close();
    if (String((e as { code?: unknown }).code ?? "").startsWith("SQLITE_BUSY") || /locked|busy/i.test((e as Error).message))
      throw new UsageError(`${path} is in use (is switchboard serve running?): stop the service first (systemctl stop switchboard)`);
    throw new UsageError(`${path} cannot be read as a database (${(e as Error).message})`);
  }
  return sqlite;
}

async function connectTarget(url: string): Promise<Db> {
  // An operator's one-off bulk copy: no statement limit to speak of (the final counts of a large table take a
  // while), one unit at a time.
  const db = openPostgres(url, { poolSize: 2, units: 1, statementTimeoutMs: 24 * 3600_000 });
  try {
    await db.sql("SELECT 1").get();
  } catch (e) {
    db.close();
    // (The pool's error speaks to API clients, "retry later"; its cause is what the operator needs.)
    const why = (((e as Error).cause as Error | undefined)?.message ?? (e as Error).message).replace(/\s*\n\s*/g, " ");
    throw new UsageError(`--to: could not connect to PostgreSQL: ${why} (${redactUrl(url)})`);
  }
  return db;
}
/** Progress on a terminal: one line per table, and every few seconds within a large one. */
function progressPrinter(enabled: boolean): ProgressListener {
  let last = performance.now();
  return ({ table, rows, done }) => {
    if (!enabled) return;
    const now = performance.now();
    if (!done && now - last < 3_000) return;
    last = now;
    process.stderr.write(`${done ? "copied" : "copying"} ${table}: ${rows.toLocaleString("en-US")} rows${done ? "" : "…"}\n`);
  };
}

function summaryText(out: MigrationResult): string {
  const width = Math.max(...out.tables.map((t) => t.table.length), 5);
  const lines = [
    `Copied ${out.source} to ${out.target} (${out.migrationsApplied} PostgreSQL migration(s) applied first)`,
    "",
    `${"table".padEnd(width)}  ${"rows".padStart(10)}`,
    ...out.tables.map((t) => `${t.table.padEnd(width)}  ${String(t.rows).padStart(10)}`),
    `${"total".padEnd(width)}  ${String(out.rows).padStart(10)}  in ${(out.ms / 1000).toFixed(1)} s (${out.rowsPerSecond.toLocaleString("en-US")} rows/s)`,
    "",
    "Row counts match SQLite for every table.",
    ...out.sequences.map((s) => `Sequence ${s.sequence} (${s.table}.${s.column}) continues after ${s.value ?? "nothing (empty table)"}.`),
    "Not copied (not data):",
    ...out.skipped.map((s) => `  ${s.table}: ${s.reason}`),
    "",
    `Next: set [storage] driver = "postgres" and url in the config, then start the service (docs/operations.md, "PostgreSQL").`,
  ];
  return lines.join("\n");
}
