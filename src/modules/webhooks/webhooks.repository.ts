/**
 * Webhook queries, on the asynchronous store contract (storeDb). CRUD goes through drizzle; the two hot
 * paths (fan-out inside every emitting transaction, and settling an attempt) use cached statements (db.sql).
 */
import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import { type Db, storeDb } from "../../db/client";
import { webhookAttempts, webhookDeliveries, webhookEndpoints, webhookMessages } from "./webhooks.table";

export type EndpointRow = typeof webhookEndpoints.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type AttemptRow = typeof webhookAttempts.$inferSelect;
export type DeliveryStatus = "pending" | "succeeded" | "failed";

/** What the delivery job needs, in one read. */
export interface DeliveryContext {
  deliveryId: string;
  companyId: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  messageId: string;
  body: string;
  endpointId: string;
  url: string;
  enabled: boolean;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: number | null;
  failingSince: number | null;
}

export type WebhooksRepository = ReturnType<typeof createWebhooksRepository>;

export function createWebhooksRepository(dbIn: Db) {
  const db = storeDb(dbIn);
  const insertMessageText = `INSERT INTO webhook_messages (id, company_id, event_type, body, created_at) VALUES (?, ?, ?, ?, ?)`;
  const insertMessageStmt = db.sql(insertMessageText);
  const insertDeliveryStmt = db.sql(
    `INSERT INTO webhook_deliveries (id, company_id, endpoint_id, message_id, event_type, status, attempts, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
  );
  const contextStmt = db.sql(
    `SELECT d.id AS "deliveryId", d.company_id AS "companyId", d.status, d.attempts, d.next_attempt_at AS "nextAttemptAt", d.message_id AS "messageId",
            m.body, e.id AS "endpointId", e.url, e.enabled, e.secret, e.previous_secret AS "previousSecret",
            e.previous_secret_expires_at AS "previousSecretExpiresAt", e.failing_since AS "failingSince"
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN webhook_messages m ON m.id = d.message_id
     WHERE d.id = ?`,
  );
  const insertAttemptStmt = db.sql(
    `INSERT INTO webhook_attempts (id, delivery_id, trigger, attempted_at, status_code, duration_ms, response_excerpt, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const settleDeliveryStmt = db.sql(
    `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, updated_at = ? WHERE id = ?`,
  );
  const setFailingSinceStmt = db.sql(`UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?`);

  return {
    // ---- endpoints ----
    async insertEndpoint(row: EndpointRow): Promise<void> {
      await db.insert(webhookEndpoints).values(row).run();
    },
    async getEndpoint(companyId: string, id: string): Promise<EndpointRow | undefined> {
      return await db
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.companyId, companyId), eq(webhookEndpoints.id, id)))
        .get();
    },
    /** Newest first, keyset on id. */
    async listEndpoints(companyId: string, limit: number, before?: string): Promise<EndpointRow[]> {
      return await db
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.companyId, companyId), before ? lt(webhookEndpoints.id, before) : undefined))
        .orderBy(desc(webhookEndpoints.id))
        .limit(limit)
        .all();
    },
    async updateEndpoint(id: string, patch: Partial<EndpointRow>): Promise<void> {
      await db.update(webhookEndpoints).set(patch).where(eq(webhookEndpoints.id, id)).run();
    },
    /**
     * Disables an enabled endpoint: true when this call did (a conditional change: of attempts that decide it side
     * by side, on PostgreSQL in units of their own, one wins; the others wait for its row and change nothing).
     */
    async disableEndpoint(id: string, reason: "gone" | "failing", at: Date): Promise<boolean> {
      const r = await db
        .update(webhookEndpoints)
        .set({ enabled: false, disabledReason: reason, failingSince: null, updatedAt: at })
        .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.enabled, true)))
        .run();
      return r.changes > 0;
    },
    async deleteEndpoint(id: string): Promise<void> {
      await db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id)).run();
    },
    async setFailingSince(endpointId: string, at: number | null): Promise<void> {
      await setFailingSinceStmt.run(at, endpointId);
    },

    // ---- fan-out (hot) ----
    async insertMessage(m: { id: string; companyId: string; eventType: string; body: string; createdAt: number }): Promise<void> {
      await insertMessageStmt.run(m.id, m.companyId, m.eventType, m.body, m.createdAt);
    },
    async insertDelivery(d: { id: string; companyId: string; endpointId: string; messageId: string; eventType: string; at: number }): Promise<void> {
      await insertDeliveryStmt.run(d.id, d.companyId, d.endpointId, d.messageId, d.eventType, d.at, d.at, d.at);
    },
    /** Every endpoint of a company with what the fan-out needs (the subscription cache's source). */
    async subscriptionsOf(companyId: string): Promise<{ id: string; events: string[]; enabled: boolean }[]> {
      return await db
        .select({ id: webhookEndpoints.id, events: webhookEndpoints.events, enabled: webhookEndpoints.enabled })
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.companyId, companyId))
        .all();
    },

    // ---- delivery (hot) ----
    async deliveryContext(deliveryId: string): Promise<DeliveryContext | null> {
      const r = (await contextStmt.get(deliveryId)) as (Omit<DeliveryContext, "enabled"> & { enabled: number }) | null;
      return r ? { ...r, enabled: r.enabled === 1 } : null;
    },
    async insertAttempt(a: AttemptRow): Promise<void> {
      await insertAttemptStmt.run(a.id, a.deliveryId, a.trigger, a.attemptedAt.getTime(), a.statusCode, a.durationMs, a.responseExcerpt, a.error);
    },
    async settleDelivery(d: {
      id: string;
      status: DeliveryStatus;
      attempts: number;
      nextAttemptAt: number | null;
      lastStatusCode: number | null;
      at: number;
    }): Promise<void> {
      await settleDeliveryStmt.run(d.status, d.attempts, d.nextAttemptAt, d.lastStatusCode, d.at, d.id);
    },

    // ---- delivery log ----
    async getDelivery(endpointId: string, id: string): Promise<DeliveryRow | undefined> {
      return await db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.id, id)))
        .get();
    },
    async setDeliveryStatus(id: string, status: DeliveryStatus, at: Date): Promise<void> {
      await db.update(webhookDeliveries).set({ status, updatedAt: at }).where(eq(webhookDeliveries.id, id)).run();
    },
    /** Newest first; `eventType` is a type name or a `prefix.*` pattern. */
    async listDeliveries(q: {
      endpointId: string;
      limit: number;
      before?: string;
      status?: DeliveryStatus;
      eventType?: string;
      id?: string;
    }): Promise<(DeliveryRow & { body: string })[]> {
      // A prefix pattern matches without regard to ASCII case, as SQLite's LIKE does: lower() on both sides,
      // since PostgreSQL's LIKE is case-sensitive.
      const typeFilter = q.eventType
        ? q.eventType.endsWith(".*")
          ? sql`lower(${webhookDeliveries.eventType}) LIKE ${
              q.eventType
                .slice(0, -1)
                .toLowerCase()
                .replace(/[%_\\]/g, "\\$&") + "%"
            } ESCAPE '\\'`
          : eq(webhookDeliveries.eventType, q.eventType)
        : undefined;
      const rows = await db
        .select({ d: webhookDeliveries, body: webhookMessages.body })
        .from(webhookDeliveries)
        .innerJoin(webhookMessages, eq(webhookMessages.id, webhookDeliveries.messageId))
        .where(
          and(
            eq(webhookDeliveries.endpointId, q.endpointId),
            q.before ? lt(webhookDeliveries.id, q.before) : undefined,
            q.id ? eq(webhookDeliveries.id, q.id) : undefined,
            q.status ? eq(webhookDeliveries.status, q.status) : undefined,
            typeFilter,
          ),
        )
        .orderBy(desc(webhookDeliveries.id))
        .limit(q.limit)
        .all();
      return rows.map((r) => ({ ...r.d, body: r.body }));
    },
    /** Attempts of these deliveries, oldest first. */
    async attemptsOf(deliveryIds: string[]): Promise<AttemptRow[]> {
      if (!deliveryIds.length) return [];
      return await db.select().from(webhookAttempts).where(inArray(webhookAttempts.deliveryId, deliveryIds)).orderBy(webhookAttempts.id).all();
    },
    /** Retention: settled deliveries older than `before` (attempts cascade), then messages no delivery uses. */
    async sweep(before: number): Promise<number> {
      const n = (await db.sql(`DELETE FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ?`).run(before)).changes;
      await db
        .sql(`DELETE FROM webhook_messages WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = webhook_messages.id)`)
        .run(before);
      return n;
    },
  };
}
