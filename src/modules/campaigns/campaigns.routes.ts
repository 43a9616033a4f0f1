/** /campaigns: estimate, create, list, detail, recipients, pause, resume, cancel. Thin: see campaigns.service.ts. */
import { Elysia } from "elysia";
import type { CampaignsNeeds } from "./campaigns.needs";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, pageLimit, toPage } from "../../platform/http/pagination";
import { CampaignModel, CreateCampaignBody, EstimateBody, EstimateModel, IdParams, ListQuery, RecipientModel, RecipientsQuery } from "./campaigns.model";
import type { RecipientRow } from "./campaigns.repository";
import type { Campaigns } from "./campaigns.service";

const recipientOut = (r: RecipientRow): typeof RecipientModel.static => ({
  contactId: r.contactId,
  status: r.status as "pending",
  reason: r.reason as (typeof RecipientModel.static)["reason"],
  messageId: r.messageId,
  updatedAt: r.updatedAt.toISOString(),
});

export const campaignsRoutes = (deps: Pick<CampaignsNeeds, "guard">, c: Campaigns) => {
  const action = (name: "pause" | "resume" | "cancel", summary: string, description: string) =>
    ({
      scope: "campaigns:write",
      params: IdParams,
      response: { 200: data(CampaignModel), ...errors(403, 404, 409) },
      detail: { summary, description, operationId: `${name}Campaign` },
    }) as const;

  return new Elysia({ tags: ["Campaigns"] })
    .use(deps.guard)
    .post("/campaigns/estimate", async ({ body, auth }) => ({ data: await c.estimate(auth.companyId, body) }), {
      scope: "campaigns:write",
      body: EstimateBody,
      response: { 200: data(EstimateModel), ...errors(403, 409, 422) },
      detail: {
        summary: "Estimate recipients and cost",
        description: "Counts the audience by send eligibility (matched = sendable + Σ excluded) and prices the sendable part. Nothing is stored.",
        operationId: "estimateCampaign",
        "x-error-codes": ["CHANNEL_ACCOUNT_MISSING"],
      },
    })
    .post(
      "/campaigns",
      async ({ body, auth, idem }) => {
        const prepared = await c.prepare(auth.companyId, body);
        return idem.batch(201, async () => c.view(await c.create(auth.companyId, auth.keyId, body, prepared)));
      },
      {
        scope: "campaigns:write",
        body: CreateCampaignBody,
        response: { 201: data(CampaignModel), ...errors(402, 403, 409, 422) },
        detail: {
          summary: "Create a campaign",
          description: "Starts at once (running), or at scheduledAt (scheduled). An estimated cost above the balance is 402 INSUFFICIENT_BALANCE.",
          operationId: "createCampaign",
          "x-error-codes": ["CHANNEL_ACCOUNT_MISSING", "INSUFFICIENT_BALANCE"],
        },
      },
    )
    .get(
      "/campaigns",
      async ({ query, auth }) => {
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0] as string | undefined;
        const rows = await c.list({ companyId: auth.companyId, status: query.status, channel: query.channel, limit: limit + 1, before });
        return toPage(rows, limit, (r) => [r.id], c.view);
      },
      {
        scope: "campaigns:read",
        query: ListQuery,
        response: { 200: list(CampaignModel), ...errors(403, 422) },
        detail: { summary: "List campaigns, newest first", operationId: "listCampaigns" },
      },
    )
    .get("/campaigns/:id", async ({ params, auth }) => ({ data: c.view(await c.get(auth.companyId, params.id)) }), {
      scope: "campaigns:read",
      params: IdParams,
      response: { 200: data(CampaignModel), ...errors(403, 404) },
      detail: { summary: "Campaign detail with funnel statistics, cost and progress", operationId: "getCampaign" },
    })
    .get(
      "/campaigns/:id/recipients",
      async ({ params, query, auth }) => {
        const limit = pageLimit(query.limit);
        const after = decodeCursor(query.cursor)?.[0] as string | undefined;
        const rows = await c.recipients(auth.companyId, params.id, { status: query.status, reason: query.reason, limit: limit + 1, after });
        return toPage(rows, limit, (r) => [r.contactId], recipientOut);
      },
      {
        scope: "campaigns:read",
        params: IdParams,
        query: RecipientsQuery,
        response: { 200: list(RecipientModel), ...errors(403, 404, 422) },
        detail: { summary: "Campaign recipients in contact order, excluded ones included", operationId: "listCampaignRecipients" },
      },
    )
    .post(
      "/campaigns/:id/pause",
      ({ params, auth, idem }) => idem.batch(200, async () => c.view(await c.pause(auth.companyId, params.id))),
      action("pause", "Pause a running campaign", "Messages already created still go out; resume continues with the recipients still pending."),
    )
    .post(
      "/campaigns/:id/resume",
      ({ params, auth, idem }) => idem.batch(200, async () => c.view(await c.resume(auth.companyId, params.id))),
      action("resume", "Resume a paused campaign", "Continues where it stopped: recipients already sent are never sent again."),
    )
    .post(
      "/campaigns/:id/cancel",
      ({ params, auth, idem }) => idem.batch(200, async () => c.view(await c.cancel(auth.companyId, params.id))),
      action("cancel", "Cancel a campaign", "Scheduled, running or paused: pending recipients become canceled at once; messages already created still go out."),
    );
};
