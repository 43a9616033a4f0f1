/**
 * The imports store: contact_imports (an import's state and counters) and contact_import_errors (its stored
 * per-row errors). Statements of the asynchronous contract (db.sql), in the caller's unit where it has one.
 */
import { storeDb, type Db } from "../../db/client";
import { perEngine } from "../../db/dialect";
import type { ImportFormat } from "./import-rows";
import { perConnection } from "../../db/per-connection";

export interface ImportRow {
  id: string;
  company_id: string;
  format: ImportFormat;
  status: "queued" | "running" | "completed" | "failed" | "cancelled";
  file_path: string;
  bytes: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  consent_kept: number;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export type ImportError = { row: number; pointer: string; message: string };

/**
 * A row's errors in the order they were stored: contact_import_errors has no key, so SQLite's rowid, and on
 * PostgreSQL the row's physical position (ctid) — insertion order for a table that is only appended to and
 * deleted from, never updated.
 */
const IMPORT_ERRORS = perEngine(
  (e) => `SELECT row, pointer, message FROM contact_import_errors WHERE import_id = ? ORDER BY row, ${e === "sqlite" ? "rowid" : "ctid"}`,
);

export function createImportsStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const importErrors = IMPORT_ERRORS[db.engine];

  return {
    async insertImport(i: { id: string; companyId: string; format: ImportFormat; filePath: string; bytes: number; at: number }): Promise<void> {
      await db
        .sql(`INSERT INTO contact_imports (id, company_id, format, status, file_path, bytes, created_at) VALUES (?, ?, ?, 'queued', ?, ?, ?)`)
        .run(i.id, i.companyId, i.format, i.filePath, i.bytes, i.at);
    },

    async importById(id: string): Promise<ImportRow | undefined> {
      return ((await db.sql(`SELECT * FROM contact_imports WHERE id = ?`).get(id)) as ImportRow | null) ?? undefined;
    },

    async importOfCompany(companyId: string, id: string): Promise<ImportRow | undefined> {
      return ((await db.sql(`SELECT * FROM contact_imports WHERE id = ? AND company_id = ?`).get(id, companyId)) as ImportRow | null) ?? undefined;
    },

    async importErrors(id: string): Promise<ImportError[]> {
      return (await db.sql(importErrors).all(id)) as unknown as ImportError[];
    },

    /** Up to `limit` of the company's imports before `before`, newest first (ids are UUID v7). */
    async listImports(companyId: string, before: string | undefined, limit: number): Promise<ImportRow[]> {
      return (await db
        .sql(`SELECT * FROM contact_imports WHERE company_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3`)
        .all(companyId, before ?? null, limit)) as unknown as ImportRow[];
    },

    async importStatus(id: string): Promise<ImportRow["status"]> {
      return ((await db.sql(`SELECT status FROM contact_imports WHERE id = ?`).get(id)) as { status: ImportRow["status"] }).status;
    },

    async markRunning(id: string, at: number): Promise<void> {
      await db.sql(`UPDATE contact_imports SET status = 'running', started_at = coalesce(started_at, ?) WHERE id = ?`).run(at, id);
    },

    /**
     * Adds one transaction's rows to the import's counters (they commit together: the job resumes at `processed`).
     */
    async addProgress(id: string, p: { processed: number; created: number; updated: number; failed: number; consentKept: number }): Promise<void> {
      await db
        .sql(
          `UPDATE contact_imports SET processed = processed + ?, created = created + ?, updated = updated + ?, failed = failed + ?, consent_kept = consent_kept + ? WHERE id = ?`,
        )
        .run(p.processed, p.created, p.updated, p.failed, p.consentKept, id);
    },

    async insertImportError(id: string, row: number, pointer: string, message: string): Promise<void> {
      await db.sql(`INSERT INTO contact_import_errors (import_id, row, pointer, message) VALUES (?, ?, ?, ?)`).run(id, row, pointer, message);
    },

    /** How many rows of the import have stored errors. */
    async erroredRows(id: string): Promise<number> {
      return Number(((await db.sql(`SELECT count(DISTINCT row) AS n FROM contact_import_errors WHERE import_id = ?`).get(id)) as { n: number }).n);
    },

    async markFailed(id: string, error: string, at: number): Promise<void> {
      await db.sql(`UPDATE contact_imports SET status = 'failed', error = ?, finished_at = ? WHERE id = ?`).run(error, at, id);
    },

    async markCompleted(id: string, at: number): Promise<void> {
      await db.sql(`UPDATE contact_imports SET status = 'completed', finished_at = ? WHERE id = ? AND status = 'running'`).run(at, id);
    },

    async markCancelled(id: string, at: number): Promise<void> {
      await db.sql(`UPDATE contact_imports SET status = 'cancelled', finished_at = ? WHERE id = ?`).run(at, id);
    },
  };
}

export type ImportsStore = ReturnType<typeof createImportsStore>;
/** The imports store of a connection (built on first use). */
export const importsStore = perConnection(createImportsStore);
