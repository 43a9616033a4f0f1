/** Request and response schemas of the pipeline API (validation and OpenAPI from the same named objects). */
import { t } from "elysia";
import { PageQuery } from "../../platform/http/pagination";
import { Money } from "../../platform/http/schemas";

const DateTime = t.String({ format: "date-time" });
const NullableDateTime = t.Union([DateTime, t.Null()]);
const ExternalId = t.String({ minLength: 1, maxLength: 100, description: "an id from your own systems (user, agent)" });
// NB! At most 9 integer digits: micro-units of larger amounts pass 2^53 and lose precision as JS numbers.
const MoneyText = t.String({
  pattern: "^\\d{1,9}(\\.\\d{1,6})?$",
  description: 'decimal amount in the billing currency, up to 999999999.999999 with 6 places ("1500", "99.90")',
});
const DateOnly = t.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}$", description: "YYYY-MM-DD" });
const CustomValue = t.Union([t.String({ maxLength: 1000 }), t.Number(), t.Boolean(), t.Null()]);

export const MoneyModel = Money;

export const StageModel = t.Object(
  {
    id: t.String({ description: "derived from the key: the same on every restart and appliance" }),
    key: t.String(),
    name: t.String(),
    order: t.Integer({ description: "1-based position" }),
    kind: t.Union([t.Literal("open"), t.Literal("won"), t.Literal("lost")]),
    probability: t.Integer({ minimum: 0, maximum: 100, description: "win probability in percent" }),
  },
  { title: "PipelineStage" },
);

export const PipelineModel = t.Object(
  {
    template: t.Union([t.Literal("sales"), t.Literal("recruiting"), t.Literal("admissions"), t.Literal("custom")]),
    terms: t.Object({ record: t.String(), records: t.String(), stage: t.String(), stages: t.String() }),
    stages: t.Array(StageModel),
  },
  { title: "Pipeline" },
);

export const RecordModel = t.Object(
  {
    id: t.String(),
    title: t.String(),
    contactId: t.String(),
    contactDeleted: t.Boolean({ description: "true once the contact was deleted; the record stays readable" }),
    conversationId: t.Union([t.String(), t.Null()]),
    stageId: t.String(),
    status: t.Union([t.Literal("open"), t.Literal("won"), t.Literal("lost")]),
    value: t.Union([MoneyModel, t.Null()]),
    ownerId: t.Union([t.String(), t.Null()]),
    expectedCloseDate: t.Union([t.String(), t.Null()]),
    customFields: t.Record(t.String(), CustomValue),
    stageEnteredAt: t.String({ format: "date-time", description: "when the record entered its current stage (time in stage)" }),
    wonAt: NullableDateTime,
    lostAt: NullableDateTime,
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: "PipelineRecord" },
);

export const HistoryModel = t.Object(
  {
    fromStageId: t.Union([t.String(), t.Null()], { description: "null on the row written when the record was created" }),
    toStageId: t.String(),
    at: DateTime,
    by: t.Union([t.String(), t.Null()], { description: "the name of the API key that made the change" }),
    reason: t.Union([t.String(), t.Null()]),
  },
  { title: "PipelineHistoryEntry" },
);

export const TaskModel = t.Object(
  {
    id: t.String(),
    title: t.String(),
    notes: t.Union([t.String(), t.Null()]),
    dueAt: NullableDateTime,
    remindAt: t.Union([DateTime, t.Null()], { description: "when task.due fires (once)" }),
    remindedAt: t.Union([DateTime, t.Null()], { description: "the remindAt that task.due fired for; null until it fires" }),
    status: t.Union([t.Literal("open"), t.Literal("done")]),
    completedAt: NullableDateTime,
    recordId: t.Union([t.String(), t.Null()]),
    contactId: t.Union([t.String(), t.Null()]),
    assigneeId: t.Union([t.String(), t.Null()]),
    createdAt: DateTime,
    updatedAt: DateTime,
  },
  { title: "PipelineTask" },
);

export const RecordDetailModel = t.Composite(
  [RecordModel, t.Object({ history: t.Array(HistoryModel, { description: "oldest first" }), tasks: t.Array(TaskModel, { description: "newest first" }) })],
  { title: "PipelineRecordDetail" },
);

export const CreateRecordBody = t.Object(
  {
    title: t.String({ minLength: 1, maxLength: 200 }),
    contactId: t.String({ minLength: 1, maxLength: 64 }),
    conversationId: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Null()])),
    stageId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "default: the first stage" })),
    value: t.Optional(t.Union([MoneyText, t.Null()])),
    ownerId: t.Optional(t.Union([ExternalId, t.Null()])),
    expectedCloseDate: t.Optional(t.Union([DateOnly, t.Null()])),
    customFields: t.Optional(t.Record(t.String({ maxLength: 100 }), CustomValue, { maxProperties: 100 })),
  },
  { additionalProperties: false, title: "CreatePipelineRecord" },
);

export const UpdateRecordBody = t.Object(
  {
    title: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    conversationId: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Null()])),
    value: t.Optional(t.Union([MoneyText, t.Null()])),
    ownerId: t.Optional(t.Union([ExternalId, t.Null()])),
    expectedCloseDate: t.Optional(t.Union([DateOnly, t.Null()])),
    customFields: t.Optional(t.Record(t.String({ maxLength: 100 }), CustomValue, { maxProperties: 100, description: "replaces the whole object" })),
    stageId: t.Optional(t.Unknown({ description: "not accepted here (422): stage changes go through POST /records/{id}/move" })),
  },
  { additionalProperties: false, description: "stage changes go through POST /records/{id}/move", title: "UpdatePipelineRecord" },
);

export const MoveRecordBody = t.Object(
  {
    stageId: t.String({ minLength: 1, maxLength: 64 }),
    reason: t.Optional(t.Union([t.String({ maxLength: 500 }), t.Null()])),
  },
  { additionalProperties: false, title: "MovePipelineRecord" },
);

export const RecordsQuery = t.Object({
  ...PageQuery,
  stageId: t.Optional(t.String()),
  status: t.Optional(t.Union([t.Literal("open"), t.Literal("won"), t.Literal("lost")])),
  contactId: t.Optional(t.String()),
  ownerId: t.Optional(t.String()),
});

export const CreateTaskBody = t.Object(
  {
    title: t.String({ minLength: 1, maxLength: 200 }),
    notes: t.Optional(t.Union([t.String({ maxLength: 5000 }), t.Null()])),
    dueAt: t.Optional(t.Union([t.String({ format: "date-time" }), t.Null()])),
    remindAt: t.Optional(t.Union([t.String({ format: "date-time" }), t.Null()], { description: "task.due fires once at this time (at once if it is past)" })),
    recordId: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Null()])),
    contactId: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Null()], { description: "default: the record's contact" })),
    assigneeId: t.Optional(t.Union([ExternalId, t.Null()])),
  },
  { additionalProperties: false, title: "CreatePipelineTask" },
);

export const UpdateTaskBody = t.Object(
  {
    title: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    notes: t.Optional(t.Union([t.String({ maxLength: 5000 }), t.Null()])),
    dueAt: t.Optional(t.Union([t.String({ format: "date-time" }), t.Null()])),
    remindAt: t.Optional(t.Union([t.String({ format: "date-time" }), t.Null()], { description: "a new time moves the reminder; null cancels it" })),
    status: t.Optional(t.Union([t.Literal("open"), t.Literal("done")], { description: "done completes the task (and cancels its reminder); open reopens it" })),
    assigneeId: t.Optional(t.Union([ExternalId, t.Null()])),
  },
  { additionalProperties: false, title: "UpdatePipelineTask" },
);

export const TasksQuery = t.Object({
  ...PageQuery,
  status: t.Optional(t.Union([t.Literal("open"), t.Literal("done")])),
  recordId: t.Optional(t.String()),
  contactId: t.Optional(t.String()),
  dueBefore: t.Optional(t.String({ description: "ISO 8601 time: tasks with dueAt before it" })),
});

export const IdParams = t.Object({ id: t.String() });
