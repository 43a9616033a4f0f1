/**
 * The OpenAPI document's `webhooks` section, from the event catalogue it is handed (the app's: src/events.ts).
 */
import type { EventTypeInfo } from "../events/events";

type Json = any;

/** `message.sent` → `MessageSentEvent` (the event's schema under components/schemas). */
const eventSchemaName = (type: string) =>
  type
    .split(/[._]/)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join("") + "Event";

const WEBHOOK_HEADERS: Json[] = [
  {
    name: "webhook-id",
    in: "header",
    required: true,
    description: "The event's id: the same on every retry and redelivery (deduplicate on it).",
    schema: { type: "string" },
  },
  {
    name: "webhook-timestamp",
    in: "header",
    required: true,
    description: "Unix seconds when this attempt was signed (refuse old ones to stop replays).",
    schema: { type: "string", pattern: "^[0-9]+$" },
  },
  {
    name: "webhook-signature",
    in: "header",
    required: true,
    description:
      'Space-separated `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` with the endpoint\'s secret (two during the 24 h after a rotation). Verify with any Standard Webhooks library.',
    schema: { type: "string" },
  },
];

/**
 * The OpenAPI 3.1 `webhooks` section: one POST per event type, as Switchboard sends it to an endpoint (Standard
 * Webhooks headers, body `{type, timestamp, data}`), so a client generator types the events too. Each event's
 * body is also a named schema (`MessageSentEvent` …) added to `schemas`.
 */
export function eventWebhooks(schemas: Record<string, Json>, eventTypes: readonly EventTypeInfo[]): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const e of eventTypes) {
    const name = eventSchemaName(e.name);
    if (schemas[name]) throw new Error(`OpenAPI: the event schema ${name} would replace a route's schema of that name`);
    schemas[name] = {
      type: "object",
      description: `The body of a \`${e.name}\` delivery. ${e.description}`,
      required: ["type", "timestamp", "data"],
      properties: {
        type: { type: "string", const: e.name },
        timestamp: { type: "string", format: "date-time", description: "when the event happened (ISO 8601 UTC)" },
        data: { type: "object", required: Object.keys(e.data), properties: e.data },
      },
    };
    out[e.name] = {
      post: {
        tags: ["Webhook events"],
        summary: e.name,
        description: `${e.description}\n\nPOSTed to every enabled endpoint subscribed to \`${e.name}\` (or a pattern such as \`${e.name.split(".")[0]}.*\`), signed per Standard Webhooks. Answer 2xx within 15 s; anything else is retried (410 disables the endpoint).`,
        operationId: `on${name}`,
        security: [],
        parameters: WEBHOOK_HEADERS,
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: { $ref: `#/components/schemas/${name}` },
              example: { type: e.name, timestamp: "2025-06-01T10:00:01.000Z", data: e.example },
            },
          },
        },
        responses: {
          "200": { description: "Received (any 2xx counts; the body is ignored)" },
          "410": { description: "Gone: the endpoint is disabled and gets no more events" },
        },
      },
    };
  }
  return out;
}
