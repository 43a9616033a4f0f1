import { Elysia, t } from "elysia";
import type { Deps } from "../../deps";
import { AppError } from "../../platform/errors";
import { data, errors } from "../../platform/http/envelope";
import { accountsFor } from "../messages/messages.service";
import { ChannelEnum } from "../messages/messages.model";
import { createLocalTemplate, listTemplates, type TemplateRow } from "./templates.service";
import { named } from "../../platform/http/schemas";

const Template = named(
  "Template",
  t.Object({
    id: t.String(),
    channel: t.String(),
    channelAccountId: t.String(),
    name: t.String(),
    language: t.String(),
    category: t.String(),
    status: t.String({ description: "approved | pending | rejected | paused | disabled" }),
    source: t.String({ description: "provider (synced) | local" }),
    components: t.Array(t.Record(t.String(), t.Unknown())),
    params: t.Array(t.String(), { description: "positional params the template takes: body.<n>, button.<n>.<m>" }),
    updatedAt: t.String(),
  }),
);

const view = (r: TemplateRow) => ({
  id: r.id,
  channel: r.channel,
  channelAccountId: r.channelAccountId,
  name: r.name,
  language: r.language,
  category: r.category,
  status: r.status,
  source: r.source,
  components: r.components as unknown as Record<string, unknown>[],
  params: r.params,
  updatedAt: r.updatedAt.toISOString(),
});

/** Channels whose templates are ours (no provider-side templates). */
const LOCAL_TEMPLATE_CHANNELS = ["email", "telegram", "x", "tiktok", "instagram", "messenger"];

export const templatesRoutes = (deps: Deps) =>
  new Elysia({ tags: ["Templates"] })
    .use(deps.guard)
    .get(
      "/templates",
      ({ query, auth }) => ({
        data: listTemplates({ db: deps.db, companyId: auth.companyId, channel: query.channel })
          .filter((r) => (query.status ?? "approved") === "all" || r.status === (query.status ?? "approved"))
          .map(view),
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
    .post(
      "/templates",
      ({ body, auth, idem }) => {
        const accounts = accountsFor(deps, auth.companyId, body.channel);
        const account = body.channelAccountId ? accounts.find((a) => a.account.id === body.channelAccountId) : accounts[0];
        if (!account)
          throw new AppError("VALIDATION_FAILED", `No ${body.channel} account`, [
            { pointer: body.channelAccountId ? "/channelAccountId" : "/channel", message: "no such account for this company" },
          ]);
        if (!LOCAL_TEMPLATE_CHANNELS.includes(body.channel) && account.account.provider !== "sandbox")
          throw new AppError("VALIDATION_FAILED", `${body.channel} templates are synced from the provider`, [
            { pointer: "/channel", message: "templates of this provider are managed at the provider" },
          ]);
        if (body.channel === "email" && body.subject === undefined)
          throw new AppError("VALIDATION_FAILED", "E-mail templates need a subject", [{ pointer: "/subject", message: "required for email" }]);
        return idem.commit(201, () =>
          view(createLocalTemplate({ db: deps.db, now: deps.now, companyId: auth.companyId, account: account.account, input: body })),
        );
      },
      {
        scope: "messages:write",
        body: t.Object({
          channel: ChannelEnum,
          channelAccountId: t.Optional(t.String({ format: "uuid" })),
          name: t.String({ pattern: "^[a-z0-9_]{1,512}$", description: "lowercase letters, digits, underscores" }),
          language: t.String({ pattern: "^[a-z]{2,3}(_[A-Z]{2})?$", description: "e.g. en, en_US" }),
          category: t.Optional(t.Union([t.Literal("marketing"), t.Literal("utility"), t.Literal("authentication")])),
          subject: t.Optional(t.String({ minLength: 1, maxLength: 998, description: "e-mail subject; may use {{n}}" })),
          body: t.String({ minLength: 1, maxLength: 10_000, description: "text with {{1}}, {{2}} … placeholders (params body.1, body.2 …)" }),
          html: t.Optional(t.String({ minLength: 1, description: "e-mail HTML body; may use {{n}}" })),
          footer: t.Optional(t.String({ maxLength: 200 })),
        }),
        response: { 201: data(Template), ...errors(403, 409, 422) },
        detail: { summary: "Create our own template (e-mail, Telegram, X, …), approved at once", operationId: "createTemplate" },
      },
    );
