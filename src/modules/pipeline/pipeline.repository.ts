/** Pipeline queries (records, stage history, tasks). Only this file touches the pipeline tables. */
import { and, count, desc, eq, inArray, lt } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { pipelineRecordHistory, pipelineRecords, pipelineTasks } from "./pipeline.table";

export type RecordRow = typeof pipelineRecords.$inferSelect;
export type HistoryRow = typeof pipelineRecordHistory.$inferSelect;
export type TaskRow = typeof pipelineTasks.$inferSelect;

/** SQLite's default limit on bound parameters is high, but long IN lists are slow to plan: chunk them. */
export const IN_CHUNK = 500;

export type PipelineRepository = ReturnType<typeof createPipelineRepository>;

export function createPipelineRepository(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    // ---- records ----
    async insertRecord(row: RecordRow): Promise<void> {
      await db.insert(pipelineRecords).values(row).run();
    },
    async getRecord(companyId: string, id: string): Promise<RecordRow | undefined> {
      return await db
        .select()
        .from(pipelineRecords)
        .where(and(eq(pipelineRecords.companyId, companyId), eq(pipelineRecords.id, id)))
        .get();
    },
    async updateRecord(id: string, patch: Partial<RecordRow>): Promise<void> {
      await db.update(pipelineRecords).set(patch).where(eq(pipelineRecords.id, id)).run();
    },
    /** Newest first, keyset on id; each filter has its own (company, column, id) index. */
    async listRecords(q: {
      companyId: string;
      limit: number;
      before?: string;
      stageId?: string;
      status?: string;
      contactId?: string;
      ownerId?: string;
    }): Promise<RecordRow[]> {
      return await db
        .select()
        .from(pipelineRecords)
        .where(
          and(
            eq(pipelineRecords.companyId, q.companyId),
            q.before ? lt(pipelineRecords.id, q.before) : undefined,
            q.stageId !== undefined ? eq(pipelineRecords.stageId, q.stageId) : undefined,
            q.status !== undefined ? eq(pipelineRecords.status, q.status) : undefined,
            q.contactId !== undefined ? eq(pipelineRecords.contactId, q.contactId) : undefined,
            q.ownerId !== undefined ? eq(pipelineRecords.ownerId, q.ownerId) : undefined,
          ),
        )
        .orderBy(desc(pipelineRecords.id))
        .limit(q.limit)
        .all();
    },
    /** Marks the records of a deleted contact (they stay readable). */
    async markContactDeleted(companyId: string, contactId: string, at: Date): Promise<number> {
      const res = await db
        .sql(`UPDATE pipeline_records SET contact_deleted_at = ? WHERE company_id = ? AND contact_id = ? AND contact_deleted_at IS NULL`)
        .run(at.getTime(), companyId, contactId);
      return res.changes;
    },
    async countWon(companyId: string, contactIds: string[]): Promise<number> {
      let n = 0;
      for (let i = 0; i < contactIds.length; i += IN_CHUNK) {
        const chunk = contactIds.slice(i, i + IN_CHUNK);
        const r = await db
          .select({ n: count() })
          .from(pipelineRecords)
          .where(and(eq(pipelineRecords.companyId, companyId), inArray(pipelineRecords.contactId, chunk), eq(pipelineRecords.status, "won")))
          .get();
        n += r?.n ?? 0;
      }
      return n;
    },

    // ---- history ----
    async insertHistory(row: HistoryRow): Promise<void> {
      await db.insert(pipelineRecordHistory).values(row).run();
    },
    async historyOf(recordId: string): Promise<HistoryRow[]> {
      return await db.select().from(pipelineRecordHistory).where(eq(pipelineRecordHistory.recordId, recordId)).orderBy(pipelineRecordHistory.id).all();
    },

    // ---- tasks ----
    async insertTask(row: TaskRow): Promise<void> {
      await db.insert(pipelineTasks).values(row).run();
    },
    async getTask(companyId: string, id: string): Promise<TaskRow | undefined> {
      return await db
        .select()
        .from(pipelineTasks)
        .where(and(eq(pipelineTasks.companyId, companyId), eq(pipelineTasks.id, id)))
        .get();
    },
    async getTaskById(id: string): Promise<TaskRow | undefined> {
      return await db.select().from(pipelineTasks).where(eq(pipelineTasks.id, id)).get();
    },
    async updateTask(id: string, patch: Partial<TaskRow>): Promise<void> {
      await db.update(pipelineTasks).set(patch).where(eq(pipelineTasks.id, id)).run();
    },
    async deleteTask(id: string): Promise<void> {
      await db.delete(pipelineTasks).where(eq(pipelineTasks.id, id)).run();
    },
    /**
     * Claims the reminder: sets reminded_at = remind_at only if the task is open, still reminds at exactly
     * `remindAt` and has not fired for it. One row changed = fire now; zero = stale job or already fired.
     */
    async claimReminder(id: string, remindAt: number): Promise<boolean> {
      return (
        (
          await db
            .sql(
              `UPDATE pipeline_tasks SET reminded_at = remind_at, reminder_job_id = NULL
             WHERE id = ? AND status = 'open' AND remind_at = ? AND (reminded_at IS NULL OR reminded_at != remind_at)`,
            )
            .run(id, remindAt)
        ).changes === 1
      );
    },
    /** Newest first, keyset on id. */
    async listTasks(q: {
      companyId: string;
      limit: number;
      before?: string;
      status?: string;
      recordId?: string;
      contactId?: string;
      dueBefore?: Date;
    }): Promise<TaskRow[]> {
      return await db
        .select()
        .from(pipelineTasks)
        .where(
          and(
            eq(pipelineTasks.companyId, q.companyId),
            q.before ? lt(pipelineTasks.id, q.before) : undefined,
            q.status !== undefined ? eq(pipelineTasks.status, q.status) : undefined,
            q.recordId !== undefined ? eq(pipelineTasks.recordId, q.recordId) : undefined,
            q.contactId !== undefined ? eq(pipelineTasks.contactId, q.contactId) : undefined,
            q.dueBefore !== undefined ? lt(pipelineTasks.dueAt, q.dueBefore) : undefined,
          ),
        )
        .orderBy(desc(pipelineTasks.id))
        .limit(q.limit)
        .all();
    },
    async tasksOfRecord(recordId: string): Promise<TaskRow[]> {
      return await db.select().from(pipelineTasks).where(eq(pipelineTasks.recordId, recordId)).orderBy(desc(pipelineTasks.id)).all();
    },
  };
}
