/**
 * /sources and /contacts/{id}/source — the licensed source-tracking module (DESIGN §13). Every route needs the
 * `sources` license (checked per request) and sources:read|write. Thin: see sources.service.ts.
 */
import { Elysia, t } from "elysia";
import type { SourcesNeeds } from "./sources.needs";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, pageLimit, queryDate, toPage } from "../../platform/http/pagination";
import { ContactSourceModel, CreateSourceBody, IdParams, ListSourcesQuery, SetContactSourceBody, SourceModel, UpdateSourceBody } from "./sources.model";
import { createSourcesService, type SourceStats } from "./sources.service";

const read = { scope: "sources:read", license: "sources" } as const;
const write = { scope: "sources:write", license: "sources" } as const;

export const sourcesRoutes = (deps: SourcesNeeds) => {
  const s = createSourcesService(deps);
  const pipelineLicensed = (slug: string) => {
    try {
      deps.license.check(slug, "pipeline");
      return true;
    } catch {
      return false;
    }
  };
  const qr = (format: "svg" | "png", mime = format === "svg" ? "image/svg+xml" : "image/png") =>
    [
      `/sources/:id/qr.${format}`,
      async ({ auth, params }: { auth: { companyId: string }; params: { id: string } }) =>
        new Response(await s.qr(auth.companyId, params.id, format), {
          headers: { "content-type": mime, "cache-control": "no-cache" },
        }),
      {
        ...read,
        params: IdParams,
        response: { 200: t.String({ description: `the QR code of the source's link (${mime})` }), ...errors(403, 404, 409) },
        detail: {
          summary: `QR code of the source's link (${format.toUpperCase()})`,
          description: "409 CONFLICT when the source has no link (the account has no chat_handle, or the channel has no click-to-chat links).",
          operationId: `sourceQr${format === "svg" ? "Svg" : "Png"}`,
          "x-openapi": { responses: { "200": { description: "The QR code", content: { [mime]: { schema: { type: "string", contentMediaType: mime } } } } } },
        },
      },
    ] as const;

  return new Elysia({ tags: ["Sources"] })
    .use(deps.guard)
    .get(
      "/sources",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const from = queryDate(query.from, "from") ?? null;
        const to = queryDate(query.to, "to") ?? null;
        const withPipeline = pipelineLicensed(auth.companySlug);
        const rows = await s.list(auth.companyId, limit + 1, decodeCursor(query.cursor)?.[0] as string | undefined);
        // The page's statistics (not the look-ahead row's), read one source after the other.
        const stats = new Map<string, SourceStats>();
        for (const r of rows.slice(0, limit)) stats.set(r.id, await s.stats(r, from, to, withPipeline));
        return toPage(
          rows,
          limit,
          (r) => [r.id],
          (r) => s.view(r, stats.get(r.id)!),
        );
      },
      {
        ...read,
        query: ListSourcesQuery,
        response: { 200: list(SourceModel), ...errors(403, 422) },
        detail: {
          summary: "List sources with statistics",
          description:
            "Newest first. `stats` counts the contacts first attributed to each source in [from, to) (all time without them), their conversations and messages, and their won pipeline records (null without the pipeline license).",
          operationId: "listSources",
        },
      },
    )
    .post("/sources", ({ auth, body, idem }) => idem.batch(201, async () => s.view(await s.create(auth.companyId, body), null)), {
      ...write,
      body: CreateSourceBody,
      response: { 201: data(SourceModel), ...errors(403, 409, 422) },
      detail: {
        summary: "Create a source (a code and its click-to-chat link)",
        description: "409 CONFLICT when the code is already used.",
        operationId: "createSource",
      },
    })
    .get("/sources/:id", async ({ auth, params }) => ({ data: s.view(await s.get(auth.companyId, params.id), null) }), {
      ...read,
      params: IdParams,
      response: { 200: data(SourceModel), ...errors(403, 404) },
      detail: { summary: "A source", operationId: "getSource" },
    })
    .patch("/sources/:id", ({ auth, params, body, idem }) => idem.batch(200, async () => s.view(await s.update(auth.companyId, params.id, body), null)), {
      ...write,
      params: IdParams,
      body: UpdateSourceBody,
      response: { 200: data(SourceModel), ...errors(403, 404, 409, 422) },
      detail: {
        summary: "Rename a source, change its type or code",
        description: "A new code changes the link; printed QR codes of the old link stop attributing.",
        operationId: "updateSource",
      },
    })
    .get(...qr("svg"))
    .get(...qr("png"))
    .get("/contacts/:id/source", async ({ auth, params }) => ({ data: await s.contactSource(auth.companyId, params.id) }), {
      ...read,
      params: IdParams,
      response: { 200: data(ContactSourceModel), ...errors(403, 404) },
      detail: { summary: "First-contact source of a contact", description: "`data: null` when the contact has none.", operationId: "getContactSource" },
    })
    .put(
      "/contacts/:id/source",
      ({ auth, params, body, idem }) => idem.batch(200, () => s.setContactSource(auth.companyId, params.id, body.sourceId, auth.name)),
      {
        ...write,
        params: IdParams,
        body: SetContactSourceBody,
        response: { 200: data(ContactSourceModel), ...errors(403, 404, 422) },
        detail: {
          summary: "Assign or remove a contact's source",
          description: "`{sourceId}` assigns, `{sourceId: null}` removes; each change is kept in `history`.",
          operationId: "setContactSource",
        },
      },
    );
};
