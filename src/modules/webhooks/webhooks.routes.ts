/** /webhooks: endpoints, secret rotation, test events, the delivery log and redelivery. Thin: see webhooks.service.ts. */
import { Elysia, t } from "elysia";
import type { WebhooksNeeds } from "./webhooks.needs";
import { EVENT_TYPES } from "../../events";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, PageQuery, pageLimit, toPage } from "../../platform/http/pagination";
import {
  CreateEndpointBody,
  DeletedModel,
  DeliveriesQuery,
  DeliveryModel,
  DeliveryParams,
  EndpointModel,
  EndpointWithSecretModel,
  EventTypeModel,
  IdParams,
  UpdateEndpointBody,
} from "./webhooks.model";
import type { AttemptRow, DeliveryRow, EndpointRow } from "./webhooks.repository";
import type { Webhooks } from "./webhooks.service";

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function endpointOut(e: EndpointRow): typeof EndpointModel.static {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    enabled: e.enabled,
    disabledReason: (e.disabledReason as "manual" | "gone" | "failing" | null) ?? null,
    previousSecretExpiresAt: e.previousSecret ? iso(e.previousSecretExpiresAt) : null,
    createdAt: e.createdAt.toISOString(),
    updatedAt: e.updatedAt.toISOString(),
  };
}

function deliveryOut({ delivery: d, body, attempts }: { delivery: DeliveryRow; body: string; attempts: AttemptRow[] }): typeof DeliveryModel.static {
  return {
    id: d.id,
    endpointId: d.endpointId,
    webhookId: d.messageId,
    eventType: d.eventType,
    status: d.status as "pending",
    attemptCount: attempts.length,
    nextAttemptAt: d.status === "pending" ? iso(d.nextAttemptAt) : null,
    lastStatusCode: d.lastStatusCode,
    payload: JSON.parse(body),
    attempts: attempts.map((a) => ({
      id: a.id,
      trigger: a.trigger as "scheduled",
      attemptedAt: a.attemptedAt.toISOString(),
      statusCode: a.statusCode,
      durationMs: a.durationMs,
      responseExcerpt: a.responseExcerpt,
      error: a.error,
    })),
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
  };
}

export const webhooksRoutes = (deps: Pick<WebhooksNeeds, "guard">, w: Webhooks) => {
  /** Runs a write in idem.batch and drops the company's subscription cache afterwards, committed or not. */
  const change = async <T>(
    idem: { batch<R>(code: number, fn: () => R | Promise<R>): Promise<{ data: R }> },
    companyId: string,
    code: number,
    fn: () => Promise<T>,
  ) => {
    try {
      return await idem.batch(code, fn);
    } finally {
      w.cache.invalidate(companyId);
    }
  };

  return new Elysia({ tags: ["Webhooks"] })
    .use(deps.guard)
    .get("/webhooks/event-types", () => ({ data: EVENT_TYPES.map((e) => ({ name: e.name, description: e.description, example: e.example })) }), {
      scope: "webhooks:read",
      response: { 200: data(t.Array(EventTypeModel)), ...errors(403) },
      detail: { summary: "The event types endpoints can subscribe to, with example payloads", operationId: "listWebhookEventTypes" },
    })
    .get(
      "/webhooks",
      async ({ auth, query }) => {
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0] as string | undefined;
        const { endpoints } = await w.listEndpoints({ companyId: auth.companyId, limit: limit + 1, before });
        return toPage(endpoints, limit, (e) => [e.id], endpointOut);
      },
      {
        scope: "webhooks:read",
        query: t.Object(PageQuery),
        response: { 200: list(EndpointModel), ...errors(403, 422) },
        detail: { summary: "List webhook endpoints, newest first", operationId: "listWebhooks" },
      },
    )
    .post(
      "/webhooks",
      ({ auth, body, idem }) =>
        change(idem, auth.companyId, 201, async () => {
          const { endpoint } = await w.createEndpoint({ companyId: auth.companyId, input: body });
          return { ...endpointOut(endpoint), secret: endpoint.secret };
        }),
      {
        scope: "webhooks:write",
        body: CreateEndpointBody,
        response: { 201: data(EndpointWithSecretModel), ...errors(403, 409, 422) },
        detail: {
          summary: "Create a webhook endpoint (the secret is returned only here)",
          description: "Events are POSTed to `url`, signed per Standard Webhooks (see /docs/guide); keep the returned `secret` to verify them.",
          operationId: "createWebhook",
          "x-openapi": {
            requestBody: {
              content: {
                "application/json": {
                  example: {
                    url: "https://crm.example.com/hooks/switchboard",
                    events: ["message.delivered", "message.failed", "message.received"],
                    description: "CRM",
                  },
                },
              },
            },
          },
        },
      },
    )
    .get("/webhooks/:id", async ({ auth, params }) => ({ data: endpointOut((await w.getEndpoint({ companyId: auth.companyId, id: params.id })).endpoint) }), {
      scope: "webhooks:read",
      params: IdParams,
      response: { 200: data(EndpointModel), ...errors(403, 404) },
      detail: { summary: "Webhook endpoint detail", operationId: "getWebhook" },
    })
    .patch(
      "/webhooks/:id",
      ({ auth, params, body, idem }) =>
        change(idem, auth.companyId, 200, async () =>
          endpointOut((await w.updateEndpoint({ companyId: auth.companyId, id: params.id, patch: body })).endpoint),
        ),
      {
        scope: "webhooks:write",
        params: IdParams,
        body: UpdateEndpointBody,
        response: { 200: data(EndpointModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Update url, events, description or enabled", operationId: "updateWebhook" },
      },
    )
    .delete(
      "/webhooks/:id",
      ({ auth, params, idem }) =>
        change(idem, auth.companyId, 200, async () => ({
          id: (await w.deleteEndpoint({ companyId: auth.companyId, id: params.id })).id,
          deleted: true as const,
        })),
      {
        scope: "webhooks:write",
        params: IdParams,
        response: { 200: data(DeletedModel), ...errors(403, 404) },
        detail: { summary: "Delete an endpoint and its delivery log", operationId: "deleteWebhook" },
      },
    )
    .post(
      "/webhooks/:id/rotate-secret",
      ({ auth, params, idem }) =>
        change(idem, auth.companyId, 200, async () => {
          const { endpoint } = await w.rotateSecret({ companyId: auth.companyId, id: params.id });
          return { ...endpointOut(endpoint), secret: endpoint.secret };
        }),
      {
        scope: "webhooks:write",
        params: IdParams,
        response: { 200: data(EndpointWithSecretModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "New secret (returned once); the old one also signs for 24 h", operationId: "rotateWebhookSecret" },
      },
    )
    .post(
      "/webhooks/:id/test",
      ({ auth, params, idem }) => idem.batch(202, async () => deliveryOut(await w.sendTest({ companyId: auth.companyId, id: params.id }))),
      {
        scope: "webhooks:write",
        params: IdParams,
        response: { 202: data(DeliveryModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Send a webhook.test event to this endpoint", operationId: "testWebhook" },
      },
    )
    .get(
      "/webhooks/:id/deliveries",
      async ({ auth, params, query }) => {
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0] as string | undefined;
        const { deliveries } = await w.listDeliveries({
          companyId: auth.companyId,
          id: params.id,
          limit: limit + 1,
          before,
          status: query.status,
          eventType: query.eventType,
        });
        return toPage(deliveries, limit, (d) => [d.delivery.id], deliveryOut);
      },
      {
        scope: "webhooks:read",
        params: IdParams,
        query: DeliveriesQuery,
        response: { 200: list(DeliveryModel), ...errors(403, 404, 422) },
        detail: { summary: "Delivery log with attempts, newest first; filter by status and eventType", operationId: "listWebhookDeliveries" },
      },
    )
    .post(
      "/webhooks/:id/deliveries/:deliveryId/redeliver",
      ({ auth, params, idem }) =>
        idem.batch(202, async () => deliveryOut(await w.redeliver({ companyId: auth.companyId, id: params.id, deliveryId: params.deliveryId }))),
      {
        scope: "webhooks:write",
        params: DeliveryParams,
        response: { 202: data(DeliveryModel), ...errors(403, 404, 409, 422) },
        detail: { summary: "Send the same message again (same webhook-id and bytes, fresh timestamp and signature)", operationId: "redeliverWebhook" },
      },
    );
};
