/** Rows → API shapes (the same shapes go into events). */
import { money } from "../../platform/money";
import type { HistoryModel, RecordModel, TaskModel } from "./pipeline.model";
import type { HistoryRow, RecordRow, TaskRow } from "./pipeline.repository";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export type RecordView = typeof RecordModel.static;
export type TaskView = typeof TaskModel.static;

export function recordView(r: RecordRow, currency: string): RecordView {
  return {
    id: r.id,
    title: r.title,
    contactId: r.contactId,
    contactDeleted: r.contactDeletedAt !== null,
    conversationId: r.conversationId,
    stageId: r.stageId,
    status: r.status as RecordView["status"],
    value: r.valueMicros === null ? null : money(r.valueMicros, currency),
    ownerId: r.ownerId,
    expectedCloseDate: r.expectedCloseDate,
    customFields: r.customFields,
    stageEnteredAt: r.stageEnteredAt.toISOString(),
    wonAt: iso(r.wonAt),
    lostAt: iso(r.lostAt),
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

export function historyView(h: HistoryRow): typeof HistoryModel.static {
  return { fromStageId: h.fromStageId, toStageId: h.toStageId, at: h.at.toISOString(), by: h.by, reason: h.reason };
}

export function taskView(t: TaskRow): TaskView {
  return {
    id: t.id,
    title: t.title,
    notes: t.notes,
    dueAt: iso(t.dueAt),
    remindAt: iso(t.remindAt),
    remindedAt: iso(t.remindedAt),
    status: t.status as TaskView["status"],
    completedAt: iso(t.completedAt),
    recordId: t.recordId,
    contactId: t.contactId,
    assigneeId: t.assigneeId,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}
