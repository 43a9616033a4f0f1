/**
 * The pipeline: records moving through the configured stages, their stage history, and tasks with durable
 * reminders (DESIGN §12). Rules only, no HTTP. Writes join the caller's unit of work (routes wrap them in
 * `idem.batch`), else run in one of their own (db.join), so a record, its history row, its events and a
 * task's reminder job commit together.
 *
 * Reminders: a task with `remindAt` owns one pending job `pipeline.task-reminder` {taskId, remindAt} due at
 * that time. Rescheduling cancels the job and enqueues a new one; completing or deleting cancels it. The
 * handler fires `task.due` only through `claimReminder` (open task, same remindAt, not yet fired for it), in
 * the job's own finalising transaction: a stale or repeated job (crash after the commit, a cancel that
 * lost the race with a running job) finds nothing to claim, so `task.due` fires once per remindAt.
 */
import type { Db } from "../../db/client";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import type { EventBus } from "../../events";
import { newId } from "../../platform/ids";
import { parseMicros } from "../../platform/money";
import type { Queue } from "../../jobs";
import { getContact } from "../contacts/contacts.service";
import { getConversationRow } from "../conversations/conversations.service";
import type { Pipeline } from "./pipeline.config";
import type { CreateRecordBody, CreateTaskBody, MoveRecordBody, UpdateRecordBody, UpdateTaskBody } from "./pipeline.model";
import { createPipelineRepository, type RecordRow, type TaskRow } from "./pipeline.repository";
import { recordView, taskView } from "./pipeline.views";

export const TASK_REMINDER_JOB = "pipeline.task-reminder";

/**
 * How many records with status `won` belong to these contacts (the source-tracking module's `recordsWon`).
 * Long id lists are queried in chunks.
 */
export async function countWonRecords({ db, companyId, contactIds }: { db: Db; companyId: string; contactIds: string[] }): Promise<number> {
  if (contactIds.length === 0) return 0;
  return await createPipelineRepository(db).countWon(companyId, contactIds);
}

export interface PipelineServiceDeps {
  db: Db;
  events: EventBus;
  queue: Queue;
  now: () => Date;
  pipeline: Pipeline;
  /** The billing currency record values are in. */
  currency: string;
}

export type PipelineService = ReturnType<typeof createPipelineService>;

export function createPipelineService({ db, events, queue, now, pipeline, currency }: PipelineServiceDeps) {
  const repo = createPipelineRepository(db);
  const view = (r: RecordRow) => recordView(r, currency);

  /** A live contact of the company, or a detail at `pointer`. */
  async function checkContact(companyId: string, contactId: string, pointer: string, details: DetailCollector): Promise<boolean> {
    try {
      await getContact({ db, companyId, id: contactId });
      return true;
    } catch (e) {
      if (e instanceof AppError && e.code === "NOT_FOUND") {
        details.add(pointer, "no such contact");
        return false;
      }
      throw e;
    }
  }

  async function checkConversation(companyId: string, conversationId: string, contactId: string, details: DetailCollector): Promise<void> {
    try {
      const c = await getConversationRow({ db, companyId, id: conversationId });
      if (c.contactId !== contactId) details.add("/conversationId", "the conversation belongs to another contact");
    } catch (e) {
      if (e instanceof AppError && e.code === "NOT_FOUND") details.add("/conversationId", "no such conversation");
      else throw e;
    }
  }

  async function mustGetRecord(companyId: string, id: string): Promise<RecordRow> {
    const r = await repo.getRecord(companyId, id);
    if (!r) throw notFound("Record");
    return r;
  }

  async function mustGetTask(companyId: string, id: string): Promise<TaskRow> {
    const t = await repo.getTask(companyId, id);
    if (!t) throw notFound("Task");
    return t;
  }

  /** Status and won/lost times for a record entering `stageId` at `at`. */
  function stageFields(stageId: string, at: Date) {
    const kind = pipeline.stageById(stageId)!.kind;
    return { stageId, status: kind, stageEnteredAt: at, wonAt: kind === "won" ? at : null, lostAt: kind === "lost" ? at : null };
  }

  const parseTime = (text: string | null | undefined, pointer: string, details: DetailCollector): Date | null | undefined => {
    if (text === undefined || text === null) return text;
    const ms = Date.parse(text);
    if (Number.isNaN(ms)) {
      details.add(pointer, "must be an ISO 8601 date-time");
      return undefined;
    }
    return new Date(ms);
  };

  const checkDate = (text: string | null | undefined, pointer: string, details: DetailCollector) => {
    if (!text) return;
    const d = new Date(`${text}T00:00:00.000Z`);
    if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== text) details.add(pointer, "must be a calendar date YYYY-MM-DD");
  };

  /** Points the task's reminder job at its current remindAt (or at nothing). Inside the caller's transaction. */
  async function armReminder(task: TaskRow): Promise<string | null> {
    if (task.reminderJobId) await queue.cancelJob(task.reminderJobId);
    const due = task.status === "open" && task.remindAt !== null && task.remindedAt?.getTime() !== task.remindAt.getTime();
    if (!due) return null;
    return queue.enqueueJob({ type: TASK_REMINDER_JOB, payload: { taskId: task.id, remindAt: task.remindAt!.getTime() }, runAt: task.remindAt! });
  }

  return {
    repo,

    getPipeline() {
      return { template: pipeline.template, terms: pipeline.terms, stages: pipeline.stages };
    },

    // ------------------------------------------------------------------------------------------ records

    async createRecord({ companyId, input, by }: { companyId: string; input: typeof CreateRecordBody.static; by: string }) {
      return db.join(async () => {
        const details = new DetailCollector();
        const contactOk = await checkContact(companyId, input.contactId, "/contactId", details);
        if (input.conversationId && contactOk) await checkConversation(companyId, input.conversationId, input.contactId, details);
        const stageId = input.stageId ?? pipeline.firstStage.id;
        if (!pipeline.stageById(stageId)) details.add("/stageId", "not a stage of this pipeline (see GET /pipeline)");
        checkDate(input.expectedCloseDate, "/expectedCloseDate", details);
        details.throwIfAny();
        const at = now();
        const row: RecordRow = {
          id: newId(),
          companyId,
          title: input.title,
          contactId: input.contactId,
          conversationId: input.conversationId ?? null,
          ...stageFields(stageId, at),
          valueMicros: input.value == null ? null : parseMicros(input.value),
          ownerId: input.ownerId ?? null,
          expectedCloseDate: input.expectedCloseDate ?? null,
          customFields: input.customFields ?? {},
          contactDeletedAt: null,
          createdAt: at,
          updatedAt: at,
        };
        await repo.insertRecord(row);
        await repo.insertHistory({ id: newId(), recordId: row.id, fromStageId: null, toStageId: stageId, at, by, reason: null });
        const record = view(row);
        events.emit({ companyId, type: "record.created", data: { record } });
        return { record };
      });
    },

    async listRecords(q: { companyId: string; limit: number; before?: string; stageId?: string; status?: string; contactId?: string; ownerId?: string }) {
      if (q.stageId !== undefined && !pipeline.stageById(q.stageId))
        throw new AppError("VALIDATION_FAILED", "stageId is not a stage of this pipeline", [
          { pointer: "query:stageId", message: "not a stage of this pipeline (see GET /pipeline)" },
        ]);
      return { records: (await repo.listRecords(q)).map(view) };
    },

    async getRecord({ companyId, id }: { companyId: string; id: string }) {
      const r = await mustGetRecord(companyId, id);
      return { record: view(r), history: await repo.historyOf(id), tasks: (await repo.tasksOfRecord(id)).map(taskView) };
    },

    async updateRecord({ companyId, id, patch }: { companyId: string; id: string; patch: typeof UpdateRecordBody.static }) {
      return db.join(async () => {
        const current = await mustGetRecord(companyId, id);
        const details = new DetailCollector();
        if (patch.stageId !== undefined) details.add("/stageId", "use POST /records/{id}/move to change the stage (it writes the history)");
        if (patch.conversationId) await checkConversation(companyId, patch.conversationId, current.contactId, details);
        checkDate(patch.expectedCloseDate, "/expectedCloseDate", details);
        details.throwIfAny();
        const changes: Partial<RecordRow> = { updatedAt: now() };
        if (patch.title !== undefined) changes.title = patch.title;
        if (patch.conversationId !== undefined) changes.conversationId = patch.conversationId;
        if (patch.value !== undefined) changes.valueMicros = patch.value === null ? null : parseMicros(patch.value);
        if (patch.ownerId !== undefined) changes.ownerId = patch.ownerId;
        if (patch.expectedCloseDate !== undefined) changes.expectedCloseDate = patch.expectedCloseDate;
        if (patch.customFields !== undefined) changes.customFields = patch.customFields;
        await repo.updateRecord(id, changes);
        const record = view(await mustGetRecord(companyId, id));
        events.emit({ companyId, type: "record.updated", data: { record } });
        return { record };
      });
    },

    /** A history row with who and why; a won/lost stage sets the status and its time (cleared when moved back to open). */
    async moveRecord({ companyId, id, input, by }: { companyId: string; id: string; input: typeof MoveRecordBody.static; by: string }) {
      return db.join(async () => {
        const current = await mustGetRecord(companyId, id);
        if (!pipeline.stageById(input.stageId))
          throw new AppError("VALIDATION_FAILED", "stageId is not a stage of this pipeline", [
            { pointer: "/stageId", message: "not a stage of this pipeline (see GET /pipeline)" },
          ]);
        if (current.stageId === input.stageId) throw new AppError("CONFLICT", "The record is already in that stage");
        const at = now();
        const reason = input.reason ?? null;
        await repo.updateRecord(id, { ...stageFields(input.stageId, at), updatedAt: at });
        await repo.insertHistory({ id: newId(), recordId: id, fromStageId: current.stageId, toStageId: input.stageId, at, by, reason });
        const record = view(await mustGetRecord(companyId, id));
        events.emit({ companyId, type: "record.moved", data: { record, fromStageId: current.stageId, toStageId: input.stageId, reason, by } });
        return { record };
      });
    },

    /** contact.deleted → the contact's records stay, marked `contactDeleted` (their history is the company's). */
    async onContactDeleted({ companyId, contactId }: { companyId: string; contactId: string }): Promise<number> {
      return await repo.markContactDeleted(companyId, contactId, now());
    },

    // ------------------------------------------------------------------------------------------ tasks

    async createTask({ companyId, input }: { companyId: string; input: typeof CreateTaskBody.static }) {
      return db.join(async () => {
        const details = new DetailCollector();
        let contactId = input.contactId ?? null;
        if (input.recordId) {
          const record = await repo.getRecord(companyId, input.recordId);
          if (!record) details.add("/recordId", "no such record");
          else if (contactId === null) contactId = record.contactId;
          else if (contactId !== record.contactId) details.add("/contactId", "not the record's contact");
        }
        if (input.contactId) await checkContact(companyId, input.contactId, "/contactId", details);
        const dueAt = parseTime(input.dueAt, "/dueAt", details);
        const remindAt = parseTime(input.remindAt, "/remindAt", details);
        details.throwIfAny();
        const at = now();
        const row: TaskRow = {
          id: newId(),
          companyId,
          title: input.title,
          notes: input.notes ?? null,
          dueAt: dueAt ?? null,
          remindAt: remindAt ?? null,
          status: "open",
          completedAt: null,
          recordId: input.recordId ?? null,
          contactId,
          assigneeId: input.assigneeId ?? null,
          reminderJobId: null,
          remindedAt: null,
          createdAt: at,
          updatedAt: at,
        };
        row.reminderJobId = await armReminder(row);
        await repo.insertTask(row);
        const task = taskView(row);
        events.emit({ companyId, type: "task.created", data: { task } });
        return { task };
      });
    },

    async listTasks(q: { companyId: string; limit: number; before?: string; status?: string; recordId?: string; contactId?: string; dueBefore?: string }) {
      let dueBefore: Date | undefined;
      if (q.dueBefore !== undefined) {
        const ms = Date.parse(q.dueBefore);
        if (Number.isNaN(ms))
          throw new AppError("VALIDATION_FAILED", "dueBefore is not a date-time", [{ pointer: "query:dueBefore", message: "must be an ISO 8601 date-time" }]);
        dueBefore = new Date(ms);
      }
      return { tasks: (await repo.listTasks({ ...q, dueBefore })).map(taskView) };
    },

    async updateTask({ companyId, id, patch }: { companyId: string; id: string; patch: typeof UpdateTaskBody.static }) {
      return db.join(async () => {
        const current = await mustGetTask(companyId, id);
        const details = new DetailCollector();
        const dueAt = parseTime(patch.dueAt, "/dueAt", details);
        const remindAt = parseTime(patch.remindAt, "/remindAt", details);
        details.throwIfAny();
        const at = now();
        const next: TaskRow = { ...current, updatedAt: at };
        if (patch.title !== undefined) next.title = patch.title;
        if (patch.notes !== undefined) next.notes = patch.notes;
        if (patch.assigneeId !== undefined) next.assigneeId = patch.assigneeId;
        if (dueAt !== undefined) next.dueAt = dueAt;
        if (remindAt !== undefined) next.remindAt = remindAt;
        const completing = patch.status === "done" && current.status !== "done";
        if (completing) Object.assign(next, { status: "done", completedAt: at });
        if (patch.status === "open" && current.status === "done") Object.assign(next, { status: "open", completedAt: null });
        const reminderChanged = next.status !== current.status || next.remindAt?.getTime() !== current.remindAt?.getTime();
        if (reminderChanged) next.reminderJobId = await armReminder(next);
        const { id: _, ...changes } = next;
        await repo.updateTask(id, changes);
        const task = taskView(next);
        if (completing) events.emit({ companyId, type: "task.completed", data: { task } });
        return { task };
      });
    },

    async deleteTask({ companyId, id }: { companyId: string; id: string }) {
      return db.join(async () => {
        const t = await mustGetTask(companyId, id);
        if (t.reminderJobId) await queue.cancelJob(t.reminderJobId);
        await repo.deleteTask(id);
        return { id };
      });
    },

    /**
     * The reminder job's writes (run in the job's finalising transaction): fire `task.due` if this job's
     * remindAt is still the task's and has not fired. Returns whether it fired.
     */
    async fireReminder({ taskId, remindAt }: { taskId: string; remindAt: number }): Promise<boolean> {
      if (!(await repo.claimReminder(taskId, remindAt))) return false;
      const t = (await repo.getTaskById(taskId))!;
      events.emit({ companyId: t.companyId, type: "task.due", data: { task: taskView(t) } });
      return true;
    },
  };
}
