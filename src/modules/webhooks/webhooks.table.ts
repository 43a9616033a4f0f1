import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * A company's webhook endpoint. `secret` signs every attempt; after a rotation `previous_secret` signs too
 * until `previous_secret_expires_at` (24 h). `failing_since` is the time of the first failed attempt with no
 * success after it: an endpoint failing for 5 days is disabled (`disabled_reason` = failing).
 */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    url: text("url").notNull(),
    description: text("description"),
    /** Subscribed event types and `prefix.*` patterns. */
    events: text("events", { mode: "json" }).$type<string[]>().notNull(),
    enabled: integer("enabled", { mode: "boolean" }).notNull(),
    /** manual | gone | failing, when disabled. */
    disabledReason: text("disabled_reason"),
    secret: text("secret").notNull(),
    previousSecret: text("previous_secret"),
    previousSecretExpiresAt: integer("previous_secret_expires_at", { mode: "timestamp_ms" }),
    failingSince: integer("failing_since", { mode: "timestamp_ms" }),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("webhook_endpoints_company_idx").on(t.companyId, t.id)],
);

/**
 * The exact bytes sent for one event (its `webhook-id` is this row's id), stored once however many
 * endpoints receive it, so retries and redeliveries send the same body.
 */
export const webhookMessages = sqliteTable("webhook_messages", {
  id: text("id").primaryKey(),
  companyId: text("company_id").notNull(),
  eventType: text("event_type").notNull(),
  body: text("body").notNull(),
  createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
});

/** One (message, endpoint) pair: its status and schedule. Attempts are in webhook_attempts. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    messageId: text("message_id")
      .notNull()
      .references(() => webhookMessages.id),
    eventType: text("event_type").notNull(),
    /** pending | succeeded | failed */
    status: text("status").notNull(),
    /** Scheduled (automatic) attempts made so far; indexes the retry schedule. */
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at", { mode: "timestamp_ms" }),
    lastStatusCode: integer("last_status_code"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  // NB! One index on purpose: every index is another b-tree page written (and fsynced) inside each
  // emitting transaction, per endpoint. Status/type filters scan the endpoint's log newest first, which
  // retention (30 days) keeps bounded.
  (t) => [index("webhook_deliveries_endpoint_idx").on(t.endpointId, t.id)],
);

/** One HTTP attempt of a delivery: what came back (or why nothing did). */
export const webhookAttempts = sqliteTable(
  "webhook_attempts",
  {
    id: text("id").primaryKey(),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    /** scheduled | manual (redeliver) */
    trigger: text("trigger").notNull(),
    attemptedAt: integer("attempted_at", { mode: "timestamp_ms" }).notNull(),
    statusCode: integer("status_code"),
    durationMs: integer("duration_ms").notNull(),
    responseExcerpt: text("response_excerpt"),
    error: text("error"),
  },
  (t) => [index("webhook_attempts_delivery_idx").on(t.deliveryId, t.id)],
);
