/**
 * Webhook endpoints: rules, no HTTP. Writes join the caller's unit of work (routes wrap them in
 * `idem.batch`), else run in one of their own (db.join). One instance per app (webhooks.module.ts), so the routes and
 * the background wiring share the subscription cache.
 */
import type { WebhooksNeeds } from "./webhooks.needs";
import type { EventMap } from "../../events";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { createSubscriptionCache } from "./webhooks.cache";
import { createDeliveryEngine, DELIVER_JOB, messageBody } from "./webhooks.delivery";
import type { CreateEndpointBody, UpdateEndpointBody } from "./webhooks.model";
import { createWebhooksRepository, type AttemptRow, type DeliveryRow, type DeliveryStatus, type EndpointRow } from "./webhooks.repository";
import { generateSecret, ROTATION_OVERLAP_MS } from "./webhooks.signing";
import { subscriptionProblem, validateSubscriptions } from "./webhooks.subscriptions";
import { createUrlPolicy } from "./webhooks.url-policy";

export type Webhooks = ReturnType<typeof createWebhooks>;

export function createWebhooks(deps: WebhooksNeeds) {
  const { db, now } = deps;
  const repo = createWebhooksRepository(db);
  const cache = createSubscriptionCache(repo);
  const policy = createUrlPolicy(deps.config.webhooks);
  const engine = createDeliveryEngine({
    repo,
    cache,
    policy,
    queue: deps.queue,
    events: deps.events,
    now,
    fetch: deps.fetch,
    timeoutMs: deps.config.webhooks.timeout_ms,
    log: deps.log,
    metrics: deps.metrics,
  });

  async function mustGet(companyId: string, id: string): Promise<EndpointRow> {
    const e = await repo.getEndpoint(companyId, id);
    if (!e) throw notFound("Webhook endpoint");
    return e;
  }

  function checkUrl(url: string, details: DetailCollector): void {
    const problem = policy.check(url);
    if (problem) details.add("/url", problem);
  }

  return {
    repo,
    cache,
    policy,
    engine,

    async createEndpoint({ companyId, input }: { companyId: string; input: typeof CreateEndpointBody.static }) {
      return db.join(async () => {
        const details = new DetailCollector();
        checkUrl(input.url, details);
        const events = validateSubscriptions(input.events, "/events", details);
        details.throwIfAny();
        const at = now();
        const enabled = input.enabled ?? true;
        const endpoint: EndpointRow = {
          id: newId(),
          companyId,
          url: input.url,
          description: input.description ?? null,
          events,
          enabled,
          disabledReason: enabled ? null : "manual",
          secret: generateSecret(),
          previousSecret: null,
          previousSecretExpiresAt: null,
          failingSince: null,
          createdAt: at,
          updatedAt: at,
        };
        await repo.insertEndpoint(endpoint);
        cache.invalidate(companyId);
        return { endpoint };
      });
    },

    async getEndpoint({ companyId, id }: { companyId: string; id: string }) {
      return { endpoint: await mustGet(companyId, id) };
    },

    async listEndpoints({ companyId, limit, before }: { companyId: string; limit: number; before?: string }) {
      return { endpoints: await repo.listEndpoints(companyId, limit, before) };
    },

    async updateEndpoint({ companyId, id, patch }: { companyId: string; id: string; patch: typeof UpdateEndpointBody.static }) {
      return db.join(async () => {
        const current = await mustGet(companyId, id);
        const details = new DetailCollector();
        if (patch.url !== undefined) checkUrl(patch.url, details);
        const events = patch.events !== undefined ? validateSubscriptions(patch.events, "/events", details) : undefined;
        details.throwIfAny();
        const changes: Partial<EndpointRow> = { updatedAt: now() };
        if (patch.url !== undefined) changes.url = patch.url;
        if (events !== undefined) changes.events = events;
        if (patch.description !== undefined) changes.description = patch.description;
        if (patch.enabled === true && !current.enabled) Object.assign(changes, { enabled: true, disabledReason: null, failingSince: null });
        if (patch.enabled === false && current.enabled) Object.assign(changes, { enabled: false, disabledReason: "manual" });
        await repo.updateEndpoint(id, changes);
        cache.invalidate(companyId);
        return { endpoint: await mustGet(companyId, id) };
      });
    },

    /** Deletes the endpoint with its delivery log; its pending jobs find nothing and end. */
    async deleteEndpoint({ companyId, id }: { companyId: string; id: string }) {
      return db.join(async () => {
        await mustGet(companyId, id);
        await repo.deleteEndpoint(id);
        cache.invalidate(companyId);
        return { id };
      });
    },

    /** New secret; the old one keeps signing (second signature) for 24 h. Returns the new secret once. */
    async rotateSecret({ companyId, id }: { companyId: string; id: string }) {
      return db.join(async () => {
        const current = await mustGet(companyId, id);
        const at = now();
        const secret = generateSecret();
        await repo.updateEndpoint(id, {
          secret,
          previousSecret: current.secret,
          previousSecretExpiresAt: new Date(at.getTime() + ROTATION_OVERLAP_MS),
          updatedAt: at,
        });
        return { endpoint: await mustGet(companyId, id) };
      });
    },

    /** Enqueues a `webhook.test` message to this endpoint only. */
    async sendTest({ companyId, id }: { companyId: string; id: string }) {
      return db.join(async () => {
        const endpoint = await mustGet(companyId, id);
        if (!endpoint.enabled) throw new AppError("CONFLICT", "The endpoint is disabled; enable it first (PATCH enabled=true)");
        const at = now();
        const messageId = newId();
        const data: EventMap["webhook.test"] = { endpointId: id, message: "Test event from Switchboard" };
        const body = messageBody("webhook.test", at, data);
        const [deliveryId] = await engine.enqueueMessage({ id: messageId, companyId, type: "webhook.test", createdAt: at, body, endpointIds: [id] });
        return { delivery: (await repo.getDelivery(id, deliveryId!))!, body, attempts: [] as AttemptRow[] };
      });
    },

    async listDeliveries({
      companyId,
      id,
      limit,
      before,
      status,
      eventType,
    }: {
      companyId: string;
      id: string;
      limit: number;
      before?: string;
      status?: DeliveryStatus;
      eventType?: string;
    }) {
      await mustGet(companyId, id);
      if (eventType !== undefined) {
        const problem = subscriptionProblem(eventType);
        if (problem || eventType === "*")
          throw new AppError("VALIDATION_FAILED", "eventType is not valid", [
            { pointer: "query:eventType", message: problem ?? "use an event type or a prefix pattern" },
          ]);
      }
      const rows = await repo.listDeliveries({ endpointId: id, limit, before, status, eventType });
      const attempts = Map.groupBy(await repo.attemptsOf(rows.map((r) => r.id)), (a) => a.deliveryId);
      return { deliveries: rows.map((r) => ({ delivery: r as DeliveryRow, body: r.body, attempts: attempts.get(r.id) ?? [] })) };
    },

    /** A new manual attempt of the same message (same webhook-id, same bytes, fresh timestamp and signature). */
    async redeliver({ companyId, id, deliveryId }: { companyId: string; id: string; deliveryId: string }) {
      return db.join(async () => {
        const endpoint = await mustGet(companyId, id);
        const delivery = await repo.getDelivery(id, deliveryId);
        if (!delivery) throw notFound("Delivery");
        if (!endpoint.enabled) throw new AppError("CONFLICT", "The endpoint is disabled; enable it first (PATCH enabled=true)");
        await repo.setDeliveryStatus(deliveryId, "pending", now());
        await deps.queue.enqueueJob({ type: DELIVER_JOB, payload: { deliveryId, manual: true }, groupKey: id });
        const row = (await repo.listDeliveries({ endpointId: id, limit: 1, id: deliveryId }))[0]!;
        return { delivery: row as DeliveryRow, body: row.body, attempts: await repo.attemptsOf([deliveryId]) };
      });
    },
  };
}
