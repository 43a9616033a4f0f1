import { Elysia, t } from "elysia";
import type { SegmentsNeeds } from "./segments.needs";
import { AppError } from "../../platform/errors";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, encodeCursor, PageQuery, pageLimit } from "../../platform/http/pagination";
import { ContactModel } from "../contacts/contacts.model";
import { SegmentCount, SegmentCountBody, SegmentCreateBody, SegmentModel, SegmentPatchBody } from "./segments.model";
import { countFilter, createSegment, deleteSegment, getSegment, listSegments, segmentContacts, updateSegment } from "./segments.service";

const IdParams = t.Object({ id: t.String() });

/** The last id of the previous page, or 422 naming query:cursor. */
function idCursor(cursor: string | undefined): string | null {
  const key = decodeCursor(cursor);
  if (!key) return null;
  if (key.length === 1 && typeof key[0] === "string") return key[0];
  throw new AppError("VALIDATION_FAILED", "The cursor is not valid", [{ pointer: "query:cursor", message: "not a cursor returned by this list" }]);
}
const page = <T extends { id: string }>(rows: T[], more: boolean, limit: number) => ({
  data: rows,
  page: { nextCursor: more && rows.length ? encodeCursor([rows[rows.length - 1]!.id]) : null, limit },
});

/** The worked example of docs/api.md: opted-in Istanbul customers who wrote in the last 30 days. */
const ISTANBUL = {
  all: [
    { field: "consent.whatsapp", op: "eq", value: "opted_in" },
    { field: "city", op: "eq", value: "Istanbul" },
    { field: "lastInboundAt", op: "gte", value: "-P30D" },
  ],
};
const json = (value: unknown) => ({
  content: { "application/json": { examples: { istanbul: { summary: "Opted-in Istanbul customers who wrote in the last 30 days", value } } } },
});
const segmentExample = {
  id: "01970f2a-7c00-7d1e-8f2a-0b1c2d3e4f61",
  name: "Istanbul, active",
  filter: ISTANBUL,
  createdAt: "2026-11-27T10:00:00.000Z",
  updatedAt: "2026-11-27T10:00:00.000Z",
};

export const segmentsRoutes = (deps: SegmentsNeeds) =>
  new Elysia({ tags: ["Segments"] })
    .use(deps.guard)
    .post("/segments", ({ auth, body, idem }) => idem.batch(201, () => createSegment(deps, { companyId: auth.companyId, input: body })), {
      scope: "contacts:write",
      body: SegmentCreateBody,
      response: { 201: data(SegmentModel), ...errors(403, 409, 422) },
      detail: {
        summary: "Save a segment (a named contact filter)",
        description:
          "The filter is checked against the fields, ops and value types it may use (422 with a pointer to the node); 409 CONFLICT when the name is taken.",
        operationId: "createSegment",
        "x-error-codes": ["CONFLICT"],
        "x-openapi": {
          requestBody: json({ name: "Istanbul, active", filter: ISTANBUL }),
          responses: { "201": json({ data: segmentExample }) },
        },
      },
    })
    .post("/segments/count", async ({ auth, body }) => ({ data: await countFilter(deps, { companyId: auth.companyId, filter: body.filter }) }), {
      scope: "contacts:read",
      body: SegmentCountBody,
      response: { 200: data(SegmentCount), ...errors(403, 422) },
      detail: {
        summary: "Count the contacts meeting an unsaved filter",
        description: 'Nothing is stored. The same members as a saved segment with this filter, and as a campaign audience `{type: "filter"}`.',
        operationId: "countSegmentFilter",
        "x-openapi": { requestBody: json({ filter: ISTANBUL }), responses: { "200": json({ data: { count: 0 } }) } },
      },
    })
    .get(
      "/segments",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const { segments, more } = await listSegments(deps, { companyId: auth.companyId, before: idCursor(query.cursor), limit });
        return page(segments, more, limit);
      },
      {
        scope: "contacts:read",
        query: t.Object(PageQuery),
        response: { 200: list(SegmentModel), ...errors(403, 422) },
        detail: { summary: "List segments, newest first", operationId: "listSegments" },
      },
    )
    .get("/segments/:id", async ({ auth, params }) => ({ data: await getSegment(deps, { companyId: auth.companyId, id: params.id }) }), {
      scope: "contacts:read",
      params: IdParams,
      response: { 200: data(SegmentModel), ...errors(403, 404) },
      detail: { summary: "Get a segment", operationId: "getSegment" },
    })
    .patch(
      "/segments/:id",
      ({ auth, params, body, idem }) => idem.batch(200, () => updateSegment(deps, { companyId: auth.companyId, id: params.id, input: body })),
      {
        scope: "contacts:write",
        params: IdParams,
        body: SegmentPatchBody,
        response: { 200: data(SegmentModel), ...errors(403, 404, 409, 422) },
        detail: {
          summary: "Rename a segment or replace its filter",
          description: "Campaigns created from the segment earlier keep the filter they were created with.",
          operationId: "updateSegment",
          "x-error-codes": ["CONFLICT"],
        },
      },
    )
    .delete("/segments/:id", ({ auth, params, idem }) => idem.batch(200, () => deleteSegment(deps, { companyId: auth.companyId, id: params.id })), {
      scope: "contacts:write",
      params: IdParams,
      response: { 200: data(t.Object({ id: t.String(), deleted: t.Literal(true) })), ...errors(403, 404) },
      detail: { summary: "Delete a segment (campaigns created from it keep their filter)", operationId: "deleteSegment" },
    })
    .get(
      "/segments/:id/contacts",
      async ({ auth, params, query }) => {
        const limit = pageLimit(query.limit);
        const { contacts, more } = await segmentContacts(deps, { companyId: auth.companyId, id: params.id, before: idCursor(query.cursor), limit });
        return page(contacts, more, limit);
      },
      {
        scope: "contacts:read",
        params: IdParams,
        query: t.Object(PageQuery),
        response: { 200: list(ContactModel), ...errors(403, 404, 422) },
        detail: { summary: "The segment's contacts now, newest first", operationId: "listSegmentContacts" },
      },
    );
