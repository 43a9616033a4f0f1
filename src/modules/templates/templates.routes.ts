import { Elysia, t } from "elysia";
import type { TemplatesNeeds } from "./templates.needs";
import { data, errors } from "../../platform/http/envelope";
import { ChannelEnum } from "../messages/messages.model";
import { campaignsUsingTemplate } from "../campaigns/campaigns.service";
import { CreateTemplateBody, Template, templateView } from "./templates.model";
import { createTemplate, deleteTemplate, getTemplate, listTemplates } from "./templates.service";

const IdParams = t.Object({ id: t.String() });
const Deleted = t.Object({ id: t.String(), deleted: t.Literal(true) });

export const templatesRoutes = (deps: TemplatesNeeds) =>
  new Elysia({ tags: ["Templates"] })
    .use(deps.guard)
    .get(
      "/templates",
      async ({ query, auth }) => ({
        data: (await listTemplates({ db: deps.db, companyId: auth.companyId, channel: query.channel }))
          .filter((r) => (query.status ?? "approved") === "all" || r.status === (query.status ?? "approved"))
          .map(templateView),
      }),
      {
        scope: "messages:read",
        query: t.Object({
          channel: t.Optional(ChannelEnum),
          status: t.Optional(
            t.Union([t.Literal("approved"), t.Literal("pending"), t.Literal("rejected"), t.Literal("paused"), t.Literal("disabled"), t.Literal("all")], {
              description: "default approved (the sendable ones); all lists every status",
            }),
          ),
        }),
        response: { 200: data(t.Array(Template)), ...errors(403, 422) },
        detail: { summary: "Templates of the company's channel accounts (synced from providers or our own)", operationId: "listTemplates" },
      },
    )
    .get("/templates/:id", async ({ params, auth }) => ({ data: templateView(await getTemplate({ db: deps.db, companyId: auth.companyId, id: params.id })) }), {
      scope: "messages:read",
      params: IdParams,
      response: { 200: data(Template), ...errors(403, 404) },
      detail: { summary: "One template, with its review status, rejection reason and quality", operationId: "getTemplate" },
    })
    .post("/templates", ({ body, auth, idem }) => createTemplate({ deps, companyId: auth.companyId, input: body, commit: (write) => idem.batch(201, write) }), {
      scope: "messages:write",
      body: CreateTemplateBody,
      response: { 201: data(Template), ...errors(403, 409, 422, 502) },
      detail: {
        summary: "Create a template: our own (e-mail, Telegram, X …) approved at once; WhatsApp submitted to Meta for review (pending)",
        description:
          "On a WhatsApp account the template is submitted to Meta with an example for every param (`examples`) and stored `pending`; Meta's verdict arrives as `template.status_changed` (the sandbox approves after 2 s, and rejects a name starting with `reject_`).",
        operationId: "createTemplate",
        "x-openapi": {
          requestBody: {
            content: {
              "application/json": {
                examples: {
                  whatsapp: {
                    summary: "A WhatsApp template, submitted for review",
                    value: {
                      channel: "whatsapp",
                      name: "order_ready",
                      language: "en",
                      category: "utility",
                      header: "Your order",
                      body: "Hi {{1}}, order {{2}} is ready for pickup.",
                      footer: "Reply STOP to opt out",
                      buttons: [{ type: "quick_reply", text: "Thanks" }],
                      examples: { "body.1": "Ann", "body.2": "A-1042" },
                    },
                  },
                  email: {
                    summary: "An e-mail template of our own, approved at once",
                    value: { channel: "email", name: "receipt", language: "en", subject: "Your receipt {{1}}", body: "Thank you for order {{1}}." },
                  },
                },
              },
            },
          },
          responses: {
            "201": {
              content: {
                "application/json": {
                  examples: {
                    whatsapp: {
                      value: {
                        data: {
                          id: "01970f2a-7c00-7d1e-8f2a-3b4c5d6e7f80",
                          channel: "whatsapp",
                          channelAccountId: "2d1c5e2a-8f0b-4c39-9d57-1b1f4c7a9e10",
                          name: "order_ready",
                          language: "en",
                          category: "utility",
                          status: "pending",
                          rejectedReason: null,
                          quality: null,
                          source: "provider",
                          components: [
                            { type: "header", format: "text", text: "Your order" },
                            { type: "body", text: "Hi {{1}}, order {{2}} is ready for pickup." },
                            { type: "footer", text: "Reply STOP to opt out" },
                            { type: "buttons", buttons: [{ type: "quick_reply", text: "Thanks" }] },
                          ],
                          params: ["body.1", "body.2"],
                          updatedAt: "2025-06-05T10:00:00.000Z",
                        },
                      },
                    },
                    email: {
                      value: {
                        data: {
                          id: "01970f2a-7c00-7d1e-8f2a-3b4c5d6e7f81",
                          channel: "email",
                          channelAccountId: "2d1c5e2a-8f0b-4c39-9d57-1b1f4c7a9e11",
                          name: "receipt",
                          language: "en",
                          category: "utility",
                          status: "approved",
                          rejectedReason: null,
                          quality: null,
                          source: "local",
                          components: [
                            { type: "header", format: "text", text: "Your receipt {{1}}" },
                            { type: "body", text: "Thank you for order {{1}}." },
                          ],
                          params: ["body.1"],
                          updatedAt: "2025-06-05T10:00:00.000Z",
                        },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    })
    .delete(
      "/templates/:id",
      async ({ params, auth }) => {
        await deleteTemplate({ deps, companyId: auth.companyId, id: params.id, inUse: (templateId) => campaignsUsingTemplate({ db: deps.db, templateId }) });
        return { data: { id: params.id, deleted: true as const } };
      },
      {
        scope: "messages:write",
        params: IdParams,
        response: { 200: data(Deleted), ...errors(403, 404, 409, 502) },
        detail: {
          summary: "Delete a template: at the provider (WhatsApp), then here; 409 TEMPLATE_IN_USE while a running or scheduled campaign uses it",
          operationId: "deleteTemplate",
          "x-error-codes": ["TEMPLATE_IN_USE"],
        },
      },
    );
