import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/**
 * A bulk import. The uploaded body is spooled to a file under the data dir; the job processes it in
 * batches, and each batch's rows commit together with the counters below — so after a crash the job
 * resumes at `processed` and no row is applied twice.
 */
export const contactImports = sqliteTable(
  "contact_imports",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    /** ndjson | csv */
    format: text("format").notNull(),
    /** queued | running | completed | failed */
    status: text("status").notNull(),
    filePath: text("file_path").notNull(),
    bytes: integer("bytes").notNull(),
    processed: integer("processed").notNull().default(0),
    created: integer("created").notNull().default(0),
    updated: integer("updated").notNull().default(0),
    failed: integer("failed").notNull().default(0),
    /** Rows whose `optIn: true` was not applied because of an earlier explicit opt-out. */
    consentKept: integer("consent_kept").notNull().default(0),
    error: text("error"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    startedAt: integer("started_at", { mode: "timestamp_ms" }),
    finishedAt: integer("finished_at", { mode: "timestamp_ms" }),
  },
  (t) => [index("contact_imports_company_idx").on(t.companyId, t.id)],
);

/** Per-row errors of an import; only the first IMPORT_ERROR_CAP are stored (`failed` counts all). */
export const contactImportErrors = sqliteTable(
  "contact_import_errors",
  {
    importId: text("import_id")
      .notNull()
      .references(() => contactImports.id),
    row: integer("row").notNull(),
    pointer: text("pointer").notNull(),
    message: text("message").notNull(),
  },
  (t) => [index("contact_import_errors_idx").on(t.importId, t.row)],
);
