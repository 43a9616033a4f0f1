/**
 * /pipeline, /records, /tasks — the licensed pipeline module (DESIGN §12). Every route needs the `pipeline`
 * license (checked per request) and pipeline:read|write. Thin: see pipeline.service.ts.
 */
import { Elysia, t } from "elysia";
import type { PipelineNeeds } from "./pipeline.needs";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, pageLimit, toPage } from "../../platform/http/pagination";
import {
  CreateRecordBody,
  CreateTaskBody,
  IdParams,
  MoveRecordBody,
  PipelineModel,
  RecordDetailModel,
  RecordModel,
  RecordsQuery,
  TaskModel,
  TasksQuery,
  UpdateRecordBody,
  UpdateTaskBody,
} from "./pipeline.model";
import { createPipelineService } from "./pipeline.service";
import { historyView } from "./pipeline.views";

const read = { scope: "pipeline:read", license: "pipeline" } as const;
const write = { scope: "pipeline:write", license: "pipeline" } as const;

export const pipelineRoutes = (deps: PipelineNeeds) => {
  const p = createPipelineService({
    db: deps.db,
    events: deps.events,
    queue: deps.queue,
    now: deps.now,
    pipeline: deps.pipeline,
    currency: deps.config.billing.currency,
  });
  const before = (cursor: string | undefined) => decodeCursor(cursor)?.[0] as string | undefined;

  return new Elysia({ tags: ["Pipeline"] })
    .use(deps.guard)
    .get("/pipeline", () => ({ data: p.getPipeline() }), {
      ...read,
      response: { 200: data(PipelineModel), ...errors(403) },
      detail: { summary: "Template, terms and stages of the pipeline", operationId: "getPipeline" },
    })
    .get(
      "/records",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const { records } = await p.listRecords({
          companyId: auth.companyId,
          limit: limit + 1,
          before: before(query.cursor),
          stageId: query.stageId,
          status: query.status,
          contactId: query.contactId,
          ownerId: query.ownerId,
        });
        return toPage(
          records,
          limit,
          (r) => [r.id],
          (r) => r,
        );
      },
      {
        ...read,
        query: RecordsQuery,
        response: { 200: list(RecordModel), ...errors(403, 422) },
        detail: { summary: "List records, newest first; filter by stageId, status, contactId, ownerId", operationId: "listRecords" },
      },
    )
    .post(
      "/records",
      ({ auth, body, idem }) => idem.batch(201, async () => (await p.createRecord({ companyId: auth.companyId, input: body, by: auth.name })).record),
      {
        ...write,
        body: CreateRecordBody,
        response: { 201: data(RecordModel), ...errors(403, 409, 422) },
        detail: { summary: "Create a record for a contact (in the first stage unless stageId is given)", operationId: "createRecord" },
      },
    )
    .get(
      "/records/:id",
      async ({ auth, params }) => {
        const { record, history, tasks } = await p.getRecord({ companyId: auth.companyId, id: params.id });
        return { data: { ...record, history: history.map(historyView), tasks } };
      },
      {
        ...read,
        params: IdParams,
        response: { 200: data(RecordDetailModel), ...errors(403, 404) },
        detail: { summary: "Record detail with its stage history and tasks", operationId: "getRecord" },
      },
    )
    .patch(
      "/records/:id",
      ({ auth, params, body, idem }) => idem.batch(200, async () => (await p.updateRecord({ companyId: auth.companyId, id: params.id, patch: body })).record),
      {
        ...write,
        params: IdParams,
        body: UpdateRecordBody,
        response: { 200: data(RecordModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Update title, value, owner, expected close date, conversation or custom fields", operationId: "updateRecord" },
      },
    )
    .post(
      "/records/:id/move",
      ({ auth, params, body, idem }) =>
        idem.batch(200, async () => (await p.moveRecord({ companyId: auth.companyId, id: params.id, input: body, by: auth.name })).record),
      {
        ...write,
        params: IdParams,
        body: MoveRecordBody,
        response: { 200: data(RecordModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Move a record to another stage (history row; won/lost set the status and time)", operationId: "moveRecord" },
      },
    )
    .get(
      "/tasks",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const { tasks } = await p.listTasks({
          companyId: auth.companyId,
          limit: limit + 1,
          before: before(query.cursor),
          status: query.status,
          recordId: query.recordId,
          contactId: query.contactId,
          dueBefore: query.dueBefore,
        });
        return toPage(
          tasks,
          limit,
          (x) => [x.id],
          (x) => x,
        );
      },
      {
        ...read,
        query: TasksQuery,
        response: { 200: list(TaskModel), ...errors(403, 422) },
        detail: { summary: "List tasks, newest first; filter by status, recordId, contactId, dueBefore", operationId: "listTasks" },
      },
    )
    .post("/tasks", ({ auth, body, idem }) => idem.batch(201, async () => (await p.createTask({ companyId: auth.companyId, input: body })).task), {
      ...write,
      body: CreateTaskBody,
      response: { 201: data(TaskModel), ...errors(403, 409, 422) },
      detail: { summary: "Add a task or reminder (task.due fires once at remindAt)", operationId: "createTask" },
    })
    .patch(
      "/tasks/:id",
      ({ auth, params, body, idem }) => idem.batch(200, async () => (await p.updateTask({ companyId: auth.companyId, id: params.id, patch: body })).task),
      {
        ...write,
        params: IdParams,
        body: UpdateTaskBody,
        response: { 200: data(TaskModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Update, reschedule, complete (status done) or reopen a task", operationId: "updateTask" },
      },
    )
    .delete(
      "/tasks/:id",
      async ({ auth, params, set }) => {
        await p.deleteTask({ companyId: auth.companyId, id: params.id });
        set.status = 204;
        return undefined;
      },
      {
        ...write,
        params: IdParams,
        response: { 204: t.Void({ description: "deleted; its reminder is cancelled" }), ...errors(403, 404) },
        detail: { summary: "Delete a task (cancels its reminder)", operationId: "deleteTask" },
      },
    );
};
