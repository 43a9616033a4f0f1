/**
 * /media: upload (multipart), list, metadata, content, delete. Files live under the data dir; rows in
 * `media`. Scopes media:read / media:write.
 */
import { Elysia, t } from "elysia";
import type { MediaNeeds } from "./media.needs";
import { AppError, notFound } from "../../platform/errors";
import { pathOf } from "../../platform/http/request-context";
import { API_PREFIX } from "../../platform/http/api-guard.plugin";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, PageQuery, pageLimit, toPage } from "../../platform/http/pagination";
import { getCompany } from "../companies/companies.service";
import type { ChannelsView } from "./media.channels";
import { mediaHeaders } from "./media.headers";
import { MediaModel, toMediaView } from "./media.model";
import { getMedia, listMedia } from "./media.service";
import { deleteMedia, MAX_MEDIA_BYTES, uploadMedia } from "./media.upload";

const IdParams = t.Object({ id: t.String() });
const DeletedModel = t.Object({ id: t.String(), deleted: t.Literal(true) });

/** Multipart framing around the file: boundaries, part headers, the `channel` field. */
const MULTIPART_SLACK = 64 * 1024;
const uploadPath = `${API_PREFIX}/media`;
/** NB! A throw inside a parse hook reaches the error plugin as "malformed JSON": the parser returns this, `transform` throws. */
const OVER_CAP = Symbol("over the upload cap");
const tooLarge = () =>
  new AppError("VALIDATION_FAILED", "The file is not accepted", [{ pointer: "/file", message: `is over the ${MAX_MEDIA_BYTES >> 20} MB limit for one file` }]);

/**
 * The multipart body read under the cap while it streams: a chunked upload (no Content-Length, which the
 * pre-check below cannot see) is refused as soon as it passes the cap, and never held past it (issue 34:
 * a chunked 700 MB upload was read whole first).
 */
async function cappedMultipart(request: Request): Promise<Record<string, unknown> | typeof OVER_CAP> {
  // Not multipart at all: nothing to read; the schema step answers 422 /file after the scope check (a body
  // that fails to parse here would be refused before it, as malformed).
  if (!/^multipart\/form-data\b/i.test(request.headers.get("content-type") ?? "")) return {};
  const cap = MAX_MEDIA_BYTES + MULTIPART_SLACK;
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (request.body) {
    const reader = request.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > cap) {
        await reader.cancel().catch(() => {});
        return OVER_CAP;
      }
      chunks.push(value);
    }
  }
  const form = await new Response(new Blob(chunks), { headers: { "content-type": request.headers.get("content-type") ?? "" } }).formData();
  chunks.length = 0;
  return Object.fromEntries(form.entries());
}

export const mediaRoutes = (deps: MediaNeeds) => {
  const publicUrl = deps.config.server.public_url;
  // Read per request (tests may swap the runtime's view).
  const channels = (): ChannelsView => deps.channels;

  return (
    new Elysia({ tags: ["Media"] })
      .use(deps.guard)
      // Refuse an obviously oversized upload before its body is read (onRequest: a throw in a parse hook
      // would surface as a JSON parse error). Runs after the guard's authentication.
      .onRequest(({ request }) => {
        if (request.method !== "POST" || pathOf(request) !== uploadPath) return;
        const length = Number(request.headers.get("content-length") ?? "0");
        if (length > MAX_MEDIA_BYTES + MULTIPART_SLACK) throw tooLarge();
      })
      .post(
        "/media",
        async ({ auth, body, idem }) => {
          const row = await uploadMedia({
            db: deps.db,
            now: deps.now,
            dataDir: deps.config.storage.data_dir,
            quotaBytes: deps.config.storage.media_quota_mb * 1024 * 1024,
            channels: channels(),
            companyId: auth.companyId,
            companySlug: (await getCompany({ db: deps.db, id: auth.companyId })).slug,
            apiKeyId: auth.keyId,
            file: body.file,
            channel: body.channel,
            commit: async (write) => {
              let out!: Awaited<ReturnType<typeof write>>;
              await idem.batch(201, async () => {
                out = await write();
                return toMediaView(out, publicUrl);
              });
              return out;
            },
          });
          return { data: toMediaView(row, publicUrl) };
        },
        {
          scope: "media:write",
          type: "multipart/form-data",
          parse: ({ request }) => cappedMultipart(request),
          transform: ({ body }) => {
            if ((body as unknown) === OVER_CAP) throw tooLarge();
          },
          body: t.Object({
            file: t.File({ description: "the file; its part's Content-Type is checked against the content" }),
            channel: t.Optional(t.String({ description: "check the file against this channel's (or channel account id's) accepted types and sizes" })),
          }),
          response: { 201: data(MediaModel), ...errors(403, 422) },
          detail: {
            summary: "Upload a file (multipart/form-data, field `file`) to send as media",
            description:
              "Max 100 MB. The declared type must match the content for images, video, audio and PDF. With `channel`, the type and size must be accepted by that channel. Over the company's quota: 422 STORAGE_LIMIT_REACHED.",
            operationId: "uploadMedia",
            "x-error-codes": ["STORAGE_LIMIT_REACHED"],
            "x-openapi": {
              requestBody: {
                content: {
                  "multipart/form-data": {
                    schema: {
                      type: "object",
                      required: ["file"],
                      properties: {
                        file: {
                          type: "string",
                          contentMediaType: "application/octet-stream",
                          description: "the file; its part's Content-Type is checked against the content",
                        },
                        channel: { type: "string", description: "check the file against this channel's (or channel account id's) accepted types and sizes" },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      )
      .get(
        "/media",
        async ({ auth, query }) => {
          const limit = pageLimit(query.limit);
          const before = decodeCursor(query.cursor)?.[0] as string | undefined;
          const rows = await listMedia({ db: deps.db, companyId: auth.companyId, limit: limit + 1, before });
          return toPage(
            rows,
            limit,
            (r) => [r.id],
            (r) => toMediaView(r, publicUrl),
          );
        },
        {
          scope: "media:read",
          query: t.Object(PageQuery),
          response: { 200: list(MediaModel), ...errors(403, 422) },
          detail: { summary: "List uploaded media, newest first", operationId: "listMedia" },
        },
      )
      .get(
        "/media/:id",
        async ({ auth, params }) => {
          const row = await getMedia({ db: deps.db, companyId: auth.companyId, id: params.id });
          if (!row) throw notFound("Media");
          return { data: toMediaView(row, publicUrl) };
        },
        {
          scope: "media:read",
          params: IdParams,
          response: { 200: data(MediaModel), ...errors(403, 404) },
          detail: { summary: "Media metadata", operationId: "getMedia" },
        },
      )
      .get(
        "/media/:id/content",
        async ({ auth, params }) => {
          const row = await getMedia({ db: deps.db, companyId: auth.companyId, id: params.id });
          if (!row) throw notFound("Media");
          const file = Bun.file(row.path);
          if (!(await file.exists())) throw notFound("Media content");
          return new Response(file, {
            headers: { ...mediaHeaders(row), etag: `"${row.sha256}"`, "cache-control": "private, max-age=0" },
          });
        },
        {
          scope: "media:read",
          params: IdParams,
          response: { 200: t.File({ description: "the bytes, with the stored Content-Type" }), ...errors(403, 404) },
          detail: {
            summary: "Media content (the bytes)",
            description: "The stored bytes with their Content-Type, Content-Length, an ETag (SHA-256) and Content-Disposition: attachment.",
            operationId: "getMediaContent",
            "x-openapi": {
              responses: {
                "200": {
                  description: "The file's bytes",
                  content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } },
                },
              },
            },
          },
        },
      )
      .delete(
        "/media/:id",
        async ({ auth, params }) => {
          await deleteMedia({ db: deps.db, companyId: auth.companyId, id: params.id });
          return { data: { id: params.id, deleted: true as const } };
        },
        {
          scope: "media:write",
          params: IdParams,
          response: { 200: data(DeletedModel), ...errors(403, 404, 409) },
          detail: {
            summary: "Delete media (409 MEDIA_IN_USE while a queued message or scheduled post uses it)",
            operationId: "deleteMedia",
            "x-error-codes": ["MEDIA_IN_USE"],
          },
        },
      )
  );
};
