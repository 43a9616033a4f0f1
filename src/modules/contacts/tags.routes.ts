import { Elysia, t } from "elysia";
import type { ContactsNeeds } from "./contacts.needs";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, encodeCursor, PageQuery, pageLimit } from "../../platform/http/pagination";
import { CustomFieldCreateBody, CustomFieldModel, TagCreateBody, TagModel } from "./contacts.model";
import { createCustomField, listCustomFields } from "./custom-fields.service";
import { createTag, listTags } from "./tags.service";

export const tagsRoutes = (deps: ContactsNeeds) =>
  new Elysia({ tags: ["Contacts"] })
    .use(deps.guard)
    .get(
      "/tags",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const after = decodeCursor(query.cursor)?.[0];
        const rows = await listTags({ db: deps.db, companyId: auth.companyId, limit: limit + 1, after: typeof after === "string" ? after : undefined });
        const more = rows.length > limit;
        const page = more ? rows.slice(0, limit) : rows;
        return { data: page, page: { nextCursor: more ? encodeCursor([page[page.length - 1]!.name]) : null, limit } };
      },
      {
        scope: "contacts:read",
        query: t.Object(PageQuery),
        response: { 200: list(TagModel), ...errors(403, 422) },
        detail: { summary: "List tags by name with their contact counts", operationId: "listTags" },
      },
    )
    .post("/tags", ({ auth, body, idem }) => idem.batch(201, () => createTag({ db: deps.db, now: deps.now, companyId: auth.companyId, name: body.name })), {
      scope: "contacts:write",
      body: TagCreateBody,
      response: { 201: data(TagModel), ...errors(403, 409, 422) },
      detail: { summary: "Create a tag (409 CONFLICT if the name exists)", operationId: "createTag" },
    })
    .get(
      "/custom-fields",
      async ({ auth }) => {
        const rows = await listCustomFields({ db: deps.db, companyId: auth.companyId });
        return { data: rows, page: { nextCursor: null, limit: rows.length } };
      },
      {
        scope: "contacts:read",
        response: { 200: list(CustomFieldModel), ...errors(403) },
        detail: { summary: "List custom field definitions (all, by key)", operationId: "listCustomFields" },
      },
    )
    .post(
      "/custom-fields",
      ({ auth, body, idem }) => idem.batch(201, () => createCustomField({ db: deps.db, now: deps.now, companyId: auth.companyId, input: body })),
      {
        scope: "contacts:write",
        body: CustomFieldCreateBody,
        response: { 201: data(CustomFieldModel), ...errors(403, 409, 422) },
        detail: { summary: "Define a custom field (text, number, boolean, date, select)", operationId: "createCustomField" },
      },
    );
