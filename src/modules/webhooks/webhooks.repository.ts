/**
 * Webhook queries. CRUD goes through drizzle; the two hot paths (fan-out inside every emitting
 * transaction, and settling an attempt) use prepared statements on the raw connection.
 */
import { and, desc, eq, inArray, lt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
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

export function createWebhooksRepository(db: Db) {
  const sqlite = db.$client;
  const insertMessageStmt = sqlite.prepare(`INSERT INTO webhook_messages (id, company_id, event_type, body, created_at) VALUES (?, ?, ?, ?, ?)`);
  const insertDeliveryStmt = sqlite.prepare(
    `INSERT INTO webhook_deliveries (id, company_id, endpoint_id, message_id, event_type, status, attempts, next_attempt_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
  );
  const contextStmt = sqlite.prepare(
    `SELECT d.id AS "deliveryId", d.company_id AS "companyId", d.status, d.attempts, d.next_attempt_at AS "nextAttemptAt", d.message_id AS "messageId",
            m.body, e.id AS "endpointId", e.url, e.enabled, e.secret, e.previous_secret AS "previousSecret",
            e.previous_secret_expires_at AS "previousSecretExpiresAt", e.failing_since AS "failingSince"
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN webhook_messages m ON m.id = d.message_id
     WHERE d.id = ?`,
  );
  const insertAttemptStmt = sqlite.prepare(
    `INSERT INTO webhook_attempts (id, delivery_id, trigger, attempted_at, status_code, duration_ms, response_excerpt, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const settleDeliveryStmt = sqlite.prepare(
    `UPDATE webhook_deliveries SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, updated_at = ? WHERE id = ?`,
  );
  const setFailingSinceStmt = sqlite.prepare(`UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?`);

  return {
    // NB! getEndpoint, updateEndpoint, subscriptionsOf, setFailingSince, insertMessage, insertDelivery,
    // insertAttempt and settleDelivery stay synchronous until their callers can wait: the event subscriber
    // and the inline fan-out run inside their emitters' transactions, and a delivery's writes() run inside
    // the job queue's synchronous finalising transaction (webhooks.delivery.ts).
    // ---- endpoints ----
    async insertEndpoint(row: EndpointRow): Promise<void> {
      db.insert(webhookEndpoints).values(row).run();
    },
    getEndpoint(companyId: string, id: string): EndpointRow | undefined {
      return db
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.companyId, companyId), eq(webhookEndpoints.id, id)))
        .get();
    },
    /** Newest first, keyset on id. */
    async listEndpoints(companyId: string, limit: number, before?: string): Promise<EndpointRow[]> {
      return db
        .select()
        .from(webhookEndpoints)
        .where(and(eq(webhookEndpoints.companyId, companyId), before ? lt(webhookEndpoints.id, before) : undefined))
        .orderBy(desc(webhookEndpoints.id))
        .limit(limit)
        .all();
    },
    /** Every endpoint of a company with what the fan-out needs (the subscription cache's source). */
    subscriptionsOf(companyId: string): { id: string; events: string[]; enabled: boolean }[] {
      return db
        .select({ id: webhookEndpoints.id, events: webhookEndpoints.events, enabled: webhookEndpoints.enabled })
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.companyId, companyId))
        .all();
    },
    updateEndpoint(id: string, patch: Partial<EndpointRow>): void {
      db.update(webhookEndpoints).set(patch).where(eq(webhookEndpoints.id, id)).run();
    },
    async deleteEndpoint(id: string): Promise<void> {
      db.delete(webhookEndpoints).where(eq(webhookEndpoints.id, id)).run();
    },
    setFailingSince(endpointId: string, at: number | null): void {
      setFailingSinceStmt.run(at, endpointId);
    },

    // ---- fan-out (hot) ----
    insertMessage(m: { id: string; companyId: string; eventType: string; body: string; createdAt: number }): void {
      insertMessageStmt.run(m.id, m.companyId, m.eventType, m.body, m.createdAt);
    },
    insertDelivery(d: { id: string; companyId: string; endpointId: string; messageId: string; eventType: string; at: number }): void {
      insertDeliveryStmt.run(d.id, d.companyId, d.endpointId, d.messageId, d.eventType, d.at, d.at, d.at);
    },

    // ---- delivery (hot) ----
    async deliveryContext(deliveryId: string): Promise<DeliveryContext | null> {
      const r = contextStmt.get(deliveryId) as (Omit<DeliveryContext, "enabled"> & { enabled: number }) | null;
      return r ? { ...r, enabled: r.enabled === 1 } : null;
    },
    insertAttempt(a: AttemptRow): void {
      insertAttemptStmt.run(a.id, a.deliveryId, a.trigger, a.attemptedAt.getTime(), a.statusCode, a.durationMs, a.responseExcerpt, a.error);
    },
    settleDelivery(d: { id: string; status: DeliveryStatus; attempts: number; nextAttemptAt: number | null; lastStatusCode: number | null; at: number }): void {
      settleDeliveryStmt.run(d.status, d.attempts, d.nextAttemptAt, d.lastStatusCode, d.at, d.id);
    },

    // ---- delivery log ----
    async getDelivery(endpointId: string, id: string): Promise<DeliveryRow | undefined> {
      return db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.endpointId, endpointId), eq(webhookDeliveries.id, id)))
        .get();
    },
    async setDeliveryStatus(id: string, status: DeliveryStatus, at: Date): Promise<void> {
      db.update(webhookDeliveries).set({ status, updatedAt: at }).where(eq(webhookDeliveries.id, id)).run();
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
      const rows = db
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
      return db.select().from(webhookAttempts).where(inArray(webhookAttempts.deliveryId, deliveryIds)).orderBy(webhookAttempts.id).all();
    },
    /** Retention: settled deliveries older than `before` (attempts cascade), then messages no delivery uses. */
    async sweep(before: number): Promise<number> {
      const n = sqlite.prepare(`DELETE FROM webhook_deliveries WHERE status != 'pending' AND updated_at < ?`).run(before).changes;
      sqlite
        .prepare(
          `DELETE FROM webhook_messages WHERE created_at < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = webhook_messages.id)`,
        )
        .run(before);
      return n;
    },
  };
}
