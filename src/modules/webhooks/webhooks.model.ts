/** Request and response schemas of the webhooks API (validation and OpenAPI from the same objects). */
import { t } from "elysia";
import { PageQuery } from "../../platform/http/pagination";
import { named } from "../../platform/http/schemas";

const EventsField = t.Array(t.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  description: "event types (message.sent), prefix patterns (message.*) or * for all; see GET /webhooks/event-types",
});

export const CreateEndpointBody = t.Object(
  {
    url: t.String({ minLength: 1, maxLength: 2048, description: "http(s) URL that receives POSTed events" }),
    events: EventsField,
    description: t.Optional(t.Union([t.String({ maxLength: 500 }), t.Null()])),
    enabled: t.Optional(t.Boolean({ default: true })),
  },
  { additionalProperties: false },
);

export const UpdateEndpointBody = t.Object(
  {
    url: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
    events: t.Optional(EventsField),
    description: t.Optional(t.Union([t.String({ maxLength: 500 }), t.Null()])),
    enabled: t.Optional(t.Boolean({ description: "true re-enables an endpoint that was disabled (by you or automatically)" })),
  },
  { additionalProperties: false },
);

export const EndpointModel = named(
  "WebhookEndpoint",
  t.Object({
    id: t.String(),
    url: t.String(),
    description: t.Union([t.String(), t.Null()]),
    events: t.Array(t.String()),
    enabled: t.Boolean(),
    disabledReason: t.Union([t.Literal("manual"), t.Literal("gone"), t.Literal("failing"), t.Null()], {
      description: "manual (PATCH enabled=false), gone (the receiver answered 410), failing (every attempt failed for 5 days)",
    }),
    previousSecretExpiresAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "after a rotation, until when the old secret also signs" }),
    createdAt: t.String({ format: "date-time" }),
    updatedAt: t.String({ format: "date-time" }),
  }),
);

export const EndpointWithSecretModel = named(
  "WebhookEndpointWithSecret",
  t.Composite([EndpointModel, t.Object({ secret: t.String({ description: "whsec_<base64 of 32 bytes>; shown only in this response" }) })]),
);

export const DeletedModel = t.Object({ id: t.String(), deleted: t.Literal(true) });

export const AttemptModel = named(
  "WebhookAttempt",
  t.Object({
    id: t.String(),
    trigger: t.Union([t.Literal("scheduled"), t.Literal("manual")], { description: "manual = redeliver" }),
    attemptedAt: t.String({ format: "date-time" }),
    statusCode: t.Union([t.Integer(), t.Null()], { description: "null when no response came back" }),
    durationMs: t.Integer(),
    responseExcerpt: t.Union([t.String(), t.Null()], { description: "first 1 KiB of the response body" }),
    error: t.Union([t.String(), t.Null()], { description: "timeout, connection error or policy refusal" }),
  }),
);

export const DeliveryModel = named(
  "WebhookDelivery",
  t.Object({
    id: t.String(),
    endpointId: t.String(),
    webhookId: t.String({ description: "the webhook-id header: the event id, the same on every retry and redelivery" }),
    eventType: t.String(),
    status: t.Union([t.Literal("pending"), t.Literal("succeeded"), t.Literal("failed")]),
    attemptCount: t.Integer({ description: "every attempt, scheduled and manual" }),
    nextAttemptAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
    lastStatusCode: t.Union([t.Integer(), t.Null()]),
    payload: t.Unknown({ description: "the body sent: {type, timestamp, data}" }),
    attempts: t.Array(AttemptModel, { description: "oldest first" }),
    createdAt: t.String({ format: "date-time" }),
    updatedAt: t.String({ format: "date-time" }),
  }),
);

export const DeliveriesQuery = t.Object({
  ...PageQuery,
  status: t.Optional(t.Union([t.Literal("pending"), t.Literal("succeeded"), t.Literal("failed")])),
  eventType: t.Optional(t.String({ description: "an event type or a prefix pattern (message.*)" })),
});

export const EventTypeModel = named(
  "WebhookEventType",
  t.Object({
    name: t.String(),
    description: t.String(),
    example: t.Unknown({ description: "example of the event's data" }),
  }),
);

export const IdParams = t.Object({ id: t.String() });
export const DeliveryParams = t.Object({ id: t.String(), deliveryId: t.String() });
