/** Contacts HTTP surface (thin: validate, authorise, call one service function, shape the response). */
import { Elysia, t } from "elysia";
import type { ContactsNeeds } from "./contacts.needs";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, encodeCursor, PageQuery, pageLimit, toPage } from "../../platform/http/pagination";
import { cancelImport, createImport, getImport, importFormat, listImports, spoolImport } from "./contact-imports.service";
import { listContacts } from "./contacts.list";
import {
  ChannelsBody,
  ContactImportModel,
  ContactImportSummaryModel,
  ContactMergeBody,
  ContactModel,
  ContactPatchBody,
  ContactUpsertBody,
  ContactUpsertResult,
  TagsBody,
} from "./contacts.model";
import { mergeContacts } from "./contacts.merge";
import { changeConsent } from "./contacts.consent";
import { addTags, deleteContact, getContact, removeTag } from "./contacts.service";
import { patchContact, upsertContact } from "./contacts.upsert";

const IdParams = t.Object({ id: t.String() });

const ListQuery = t.Object({
  ...PageQuery,
  tag: t.Optional(t.Union([t.String(), t.Array(t.String())], { description: "tag name; repeat for several" })),
  tagMatch: t.Optional(t.Union([t.Literal("any"), t.Literal("all")], { description: "with several tags: any (default) or all" })),
  channel: t.Optional(t.String({ description: "contacts with an identity on this channel" })),
  consent: t.Optional(t.String({ description: "<channel>:<opted_in|opted_out|unknown>, e.g. whatsapp:opted_in" })),
  q: t.Optional(
    t.String({
      maxLength: 200,
      description: "word prefixes of the name in any order (case- and accent-insensitive), or a prefix of an e-mail, phone or handle",
    }),
  ),
  createdAfter: t.Optional(t.String({ description: "ISO 8601 date-time" })),
  updatedAfter: t.Optional(t.String({ description: "ISO 8601 date-time" })),
});

export const contactsRoutes = (deps: ContactsNeeds) => {
  const w = { db: deps.db, events: deps.events, now: deps.now };
  return new Elysia({ tags: ["Contacts"] })
    .use(deps.guard)
    .get(
      "/contacts",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0];
        const { rows, more } = await listContacts({
          db: deps.db,
          companyId: auth.companyId,
          limit,
          before: typeof before === "string" ? before : undefined,
          filters: {
            tags: query.tag === undefined ? undefined : Array.isArray(query.tag) ? query.tag : [query.tag],
            tagMatch: query.tagMatch,
            channel: query.channel,
            consent: query.consent,
            q: query.q,
            createdAfter: query.createdAfter,
            updatedAfter: query.updatedAfter,
          },
        });
        const last = rows[rows.length - 1];
        return { data: rows, page: { nextCursor: more && last ? encodeCursor([last.id]) : null, limit } };
      },
      {
        scope: "contacts:read",
        query: ListQuery,
        response: { 200: list(ContactModel), ...errors(403, 422) },
        detail: { summary: "List contacts, newest first, with filters", operationId: "listContacts" },
      },
    )
    .post(
      "/contacts",
      ({ auth, body, idem }) =>
        // The status (200/201) is known only after the upsert: run it and the idempotency record in one
        // group-committed transaction (idem.batch nests in it; one fsync for concurrent upserts).
        deps.db.unit(async () => {
          const r = await upsertContact({ ...w, companyId: auth.companyId, input: body });
          return idem.batch(r.created ? 201 : 200, () => ({ created: r.created, contact: r.contact }));
        }),
      {
        scope: "contacts:write",
        body: ContactUpsertBody,
        response: { 200: data(ContactUpsertResult), 201: data(ContactUpsertResult), ...errors(403, 409, 422) },
        detail: {
          summary: "Create or update a contact by its identities (upsert)",
          description:
            "200 `created:false` when an identity belongs to a contact (updated), 201 `created:true` otherwise; 409 CONFLICT when the identities belong to different contacts.",
          operationId: "upsertContact",
          "x-openapi": {
            requestBody: {
              content: {
                "application/json": {
                  example: {
                    firstName: "Ann",
                    lastName: "Lee",
                    country: "US",
                    identities: [
                      { channel: "whatsapp", value: "+14155550101" },
                      { channel: "email", value: "ann@example.com" },
                    ],
                    tags: ["vip"],
                    optIn: true,
                  },
                },
              },
            },
          },
        },
      },
    )
    .post(
      "/contacts/import",
      async ({ auth, request, idem }) => {
        const format = importFormat(request.headers.get("content-type"));
        const spooled = await spoolImport({ dataDir: deps.config.storage.data_dir, body: request.body, format });
        return idem.batch(202, () => createImport({ db: deps.db, queue: deps.queue, now: deps.now, companyId: auth.companyId, format, ...spooled }));
      },
      {
        scope: "contacts:write",
        parse: "none",
        response: { 202: data(ContactImportModel), ...errors(403, 422) },
        detail: {
          summary: "Bulk import contacts from NDJSON or CSV (streamed body, runs as a job)",
          description: "Content-Type application/x-ndjson (one upsert body per line) or text/csv (header row). Poll GET /contacts/imports/{id}.",
          operationId: "importContacts",
          "x-openapi": {
            requestBody: {
              required: true,
              description: "The contacts, streamed: one upsert body (as POST /contacts) per NDJSON line, or CSV with a header row.",
              content: {
                "application/x-ndjson": {
                  schema: { type: "string" },
                  example:
                    '{"identities":[{"channel":"whatsapp","value":"+14155550101"}],"firstName":"Ann","tags":["vip"]}\n{"identities":[{"channel":"email","value":"bob@example.com"}],"firstName":"Bob"}\n',
                },
                "text/csv": {
                  schema: { type: "string" },
                  example: "firstName,lastName,whatsapp,email,tags,optIn\nAnn,Lee,+14155550101,ann@example.com,vip|june,true\n",
                },
              },
            },
          },
        },
      },
    )
    .get(
      "/contacts/imports",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0];
        const rows = await listImports({ db: deps.db, companyId: auth.companyId, limit: limit + 1, before: typeof before === "string" ? before : undefined });
        return toPage(
          rows,
          limit,
          (r) => [r.id],
          (r) => r,
        );
      },
      {
        scope: "contacts:read",
        query: t.Object(PageQuery),
        response: { 200: list(ContactImportSummaryModel), ...errors(403, 422) },
        detail: { summary: "Imports, newest first (without per-row errors: see GET /contacts/imports/{id})", operationId: "listContactImports" },
      },
    )
    .get("/contacts/imports/:id", async ({ auth, params }) => ({ data: await getImport({ db: deps.db, companyId: auth.companyId, id: params.id }) }), {
      scope: "contacts:read",
      params: IdParams,
      response: { 200: data(ContactImportModel), ...errors(403, 404) },
      detail: { summary: "Import progress and per-row errors", operationId: "getContactImport" },
    })
    .post(
      "/contacts/imports/:id/cancel",
      ({ auth, params, idem }) => idem.batch(200, () => cancelImport({ db: deps.db, now: deps.now, companyId: auth.companyId, id: params.id })),
      {
        scope: "contacts:write",
        params: IdParams,
        response: { 200: data(ContactImportModel), ...errors(403, 404, 409) },
        detail: { summary: "Cancel a queued or running import (rows already written stay)", operationId: "cancelContactImport" },
      },
    )
    .get("/contacts/:id", async ({ auth, params }) => ({ data: await getContact({ db: deps.db, companyId: auth.companyId, id: params.id }) }), {
      scope: "contacts:read",
      params: IdParams,
      response: { 200: data(ContactModel), ...errors(403, 404) },
      detail: { summary: "Contact detail", operationId: "getContact" },
    })
    .patch(
      "/contacts/:id",
      ({ auth, params, body, idem }) => idem.batch(200, () => patchContact({ ...w, companyId: auth.companyId, id: params.id, input: body })),
      {
        scope: "contacts:write",
        params: IdParams,
        body: ContactPatchBody,
        response: { 200: data(ContactModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Update a contact (absent = unchanged, null = cleared; identities and tags replace)", operationId: "updateContact" },
      },
    )
    .delete("/contacts/:id", ({ auth, params, idem }) => idem.batch(200, () => deleteContact({ ...w, companyId: auth.companyId, id: params.id })), {
      scope: "contacts:write",
      params: IdParams,
      response: { 200: data(t.Object({ id: t.String(), deleted: t.Literal(true) })), ...errors(403, 404) },
      detail: { summary: "Delete a contact: erases personal data and identities; 404 afterwards", operationId: "deleteContact" },
    })
    .post(
      "/contacts/:id/tags",
      ({ auth, params, body, idem }) => idem.batch(200, () => addTags({ ...w, companyId: auth.companyId, id: params.id, tags: body.tags })),
      {
        scope: "contacts:write",
        params: IdParams,
        body: TagsBody,
        response: { 200: data(ContactModel), ...errors(403, 404, 422) },
        detail: { summary: "Add tags to a contact (missing tags are created)", operationId: "addContactTags" },
      },
    )
    .delete(
      "/contacts/:id/tags/:tagName",
      ({ auth, params, idem }) => idem.batch(200, () => removeTag({ ...w, companyId: auth.companyId, id: params.id, tagName: params.tagName })), // NB! Elysia has decoded it; decoding again broke "50%off" (500) and "%2520"
      {
        scope: "contacts:write",
        params: t.Object({ id: t.String(), tagName: t.String() }),
        response: { 200: data(ContactModel), ...errors(403, 404) },
        detail: { summary: "Remove a tag from a contact", operationId: "removeContactTag" },
      },
    )
    .post(
      "/contacts/:id/merge",
      ({ auth, params, body, idem }) =>
        idem.batch(200, async () => (await mergeContacts({ ...w, companyId: auth.companyId, id: params.id, fromContactId: body.fromContactId })).contact),
      {
        scope: "contacts:write",
        params: IdParams,
        body: ContactMergeBody,
        response: { 200: data(ContactModel), ...errors(403, 404, 422) },
        detail: {
          summary: "Merge another contact into this one (the other is gone afterwards)",
          description:
            "Folds `fromContactId` into `{id}` in one transaction: identities, tags, consent (an opt-out on either side wins), custom fields (this contact's value wins), conversations, messages, pipeline records and tasks, source (the earlier first touch wins) and campaign recipients. Emits `contact.merged`. Merging a contact into itself: 422 at `/fromContactId`.",
          operationId: "mergeContacts",
          "x-openapi": {
            requestBody: { content: { "application/json": { example: { fromContactId: "0193a4b2-6c1e-7b3a-9f4d-2a5b8c9d0e1f" } } } },
          },
        },
      },
    )
    .post(
      "/contacts/:id/opt-out",
      ({ auth, params, body, idem }) =>
        idem.batch(200, () => changeConsent({ ...w, companyId: auth.companyId, id: params.id, channels: body.channels, status: "opted_out" })),
      {
        scope: "contacts:write",
        params: IdParams,
        body: ChannelsBody,
        response: { 200: data(ContactModel), ...errors(403, 404, 422) },
        detail: { summary: "Remove channel consent (opted_out)", operationId: "optOutContact" },
      },
    )
    .post(
      "/contacts/:id/opt-in",
      ({ auth, params, body, idem }) =>
        idem.batch(200, () => changeConsent({ ...w, companyId: auth.companyId, id: params.id, channels: body.channels, status: "opted_in" })),
      {
        scope: "contacts:write",
        params: IdParams,
        body: ChannelsBody,
        response: { 200: data(ContactModel), ...errors(403, 404, 422) },
        detail: { summary: "Grant channel consent (opted_in)", operationId: "optInContact" },
      },
    );
};
