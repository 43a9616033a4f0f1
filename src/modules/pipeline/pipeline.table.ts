import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * A pipeline record (a deal, candidate or application): one contact's way through the configured stages.
 * `stage_id` is a config stage's derived id (pipeline.config.ts), not a foreign key: stages live in the
 * config. `contact_deleted_at` is set when the contact is deleted (the record stays readable, DESIGN §12).
 */
export const pipelineRecords = sqliteTable(
  "pipeline_records",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    title: text("title").notNull(),
    contactId: text("contact_id").notNull(),
    conversationId: text("conversation_id"),
    stageId: text("stage_id").notNull(),
    /** open | won | lost: the kind of the stage the record is in. */
    status: text("status").notNull(),
    /** Money in micro-units of the billing currency. */
    valueMicros: integer("value_micros"),
    ownerId: text("owner_id"),
    /** YYYY-MM-DD */
    expectedCloseDate: text("expected_close_date"),
    customFields: text("custom_fields", { mode: "json" }).$type<Record<string, string | number | boolean | null>>().notNull(),
    stageEnteredAt: integer("stage_entered_at", { mode: "timestamp_ms" }).notNull(),
    wonAt: integer("won_at", { mode: "timestamp_ms" }),
    lostAt: integer("lost_at", { mode: "timestamp_ms" }),
    contactDeletedAt: integer("contact_deleted_at", { mode: "timestamp_ms" }),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  // Every list filter walks one of these newest first (keyset on id).
  (t) => [
    index("pipeline_records_company_idx").on(t.companyId, t.id),
    index("pipeline_records_stage_idx").on(t.companyId, t.stageId, t.id),
    index("pipeline_records_status_idx").on(t.companyId, t.status, t.id),
    index("pipeline_records_contact_idx").on(t.companyId, t.contactId, t.id),
    index("pipeline_records_owner_idx").on(t.companyId, t.ownerId, t.id),
  ],
);

/** Stage history: one row when a record is created (from null) and one per move. `by` is the API key's name. */
export const pipelineRecordHistory = sqliteTable(
  "pipeline_record_history",
  {
    id: text("id").primaryKey(),
    recordId: text("record_id")
      .notNull()
      .references(() => pipelineRecords.id, { onDelete: "cascade" }),
    fromStageId: text("from_stage_id"),
    toStageId: text("to_stage_id").notNull(),
    at: integer("at", { mode: "timestamp_ms" }).notNull(),
    by: text("by"),
    reason: text("reason"),
  },
  (t) => [index("pipeline_record_history_record_idx").on(t.recordId, t.id)],
);

/**
 * A task or reminder, on a record and/or a contact. The reminder is a durable job (`reminder_job_id`) that
 * fires `task.due` once: `reminded_at` records the `remind_at` it fired for, set in the job's transaction.
 */
export const pipelineTasks = sqliteTable(
  "pipeline_tasks",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    title: text("title").notNull(),
    notes: text("notes"),
    dueAt: integer("due_at", { mode: "timestamp_ms" }),
    remindAt: integer("remind_at", { mode: "timestamp_ms" }),
    /** open | done */
    status: text("status").notNull(),
    completedAt: integer("completed_at", { mode: "timestamp_ms" }),
    recordId: text("record_id"),
    contactId: text("contact_id"),
    assigneeId: text("assignee_id"),
    reminderJobId: text("reminder_job_id"),
    remindedAt: integer("reminded_at", { mode: "timestamp_ms" }),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [
    index("pipeline_tasks_company_idx").on(t.companyId, t.id),
    index("pipeline_tasks_record_idx").on(t.recordId, t.id),
    index("pipeline_tasks_contact_idx").on(t.companyId, t.contactId, t.id),
  ],
);
