/**
 * The catalogue of event types: what features emit and what webhook endpoints can subscribe to.
 * Feature-blind: a name, what it means and an example `data` payload (served at GET /webhooks/event-types
 * and shown in docs/api.md). A feature that emits a new type appends one entry here.
 *
 * Payload conventions (contract for emitters):
 *   message.*       data = { message: <full message record incl. metadata, status, error> }
 *   contact.*       data = { contact }  (+ channel, source for contact.opted_in / contact.opted_out);
 *                   contact.source_attributed: data = { contactId, source, attributedAt, via, referral, history }
 *                   contact.merged: data = { contactId, mergedContactId }
 *   conversation.*  data = { conversation }
 *   campaign.*      data = { campaign }  (the Campaign of GET /campaigns/{id}, at the moment of the change)
 *   record.*        data = { record }  (+ fromStageId, toStageId, reason, by for record.moved)
 *   task.*          data = { task }
 *   template.*      data = { template, previousStatus, previousQuality }  (the Template of GET /templates/{id})
 */

export interface EventTypeInfo {
  name: string;
  description: string;
  /** An example of the event's `data`. */
  example: Record<string, unknown>;
  /**
   * The JSON Schema of each key of `data` (all required), for the OpenAPI document's `webhooks` section. A
   * resource is named by `ref("Message")`: the schema its routes publish under `components/schemas`, so the
   * event and GET /messages/{id} cannot drift apart. NB! A name no route publishes leaves a dangling `$ref`,
   * which the OpenAPI tests (strict validator, Redocly) refuse.
   */
  data: Record<string, JsonSchema>;
}

type JsonSchema = Record<string, unknown>;
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const text = (description: string): JsonSchema => ({ type: "string", description });
const nullableText = (description: string): JsonSchema => ({ type: ["string", "null"], description });
const dateTime = (description: string): JsonSchema => ({ type: "string", format: "date-time", description });
const CONSENT_DATA = {
  contact: ref("Contact"),
  channel: {
    type: "string",
    enum: ["whatsapp", "instagram", "messenger", "x", "tiktok", "telegram", "email"],
    description: "the channel whose consent changed",
  },
  source: text("what changed it: api, inbound_keyword, inbound, campaign_unsubscribe, import …"),
};

const exampleMessage = (status: string, extra: Record<string, unknown> = {}) => {
  const at = (reached: boolean, t: string) => (reached ? t : null);
  const order = ["queued", "sent", "delivered", "read"];
  const reached = (s: string) => order.indexOf(status) >= order.indexOf(s) && order.includes(status);
  return {
    id: "01970f2a-6b1e-7c3d-9a4b-2f5e8d7c6b5a",
    status,
    direction: "outbound",
    conversationId: "01970f2a-5a10-7b2c-8d3e-4f5a6b7c8d9e",
    contactId: "01970f29-ffe0-7a1b-9c2d-3e4f5a6b7c8d",
    channel: "whatsapp",
    channelAccountId: "2d1c5e2a-8f0b-4c39-9d57-1b1f4c7a9e10",
    type: "template",
    content: { template: { name: "hello_world", language: "en", params: { "body.1": "Ada" } } },
    address: "+447700900123",
    priceType: "wa_template_text",
    unitPrice: "0.050000",
    charged: true,
    refunded: false,
    metadata: { orderId: "A-1042" },
    templateId: "01970e00-0000-7000-8000-00000000c0de",
    replyToMessageId: null,
    providerMessageId: "wamid.HBgLMzE2MTIzNDU2NzgVAgARGBI",
    campaignId: null,
    error: null,
    scheduledAt: null,
    statusTimes: {
      queuedAt: "2025-06-01T10:00:00.000Z",
      sentAt: at(reached("sent"), "2025-06-01T10:00:01.000Z"),
      deliveredAt: at(reached("delivered"), "2025-06-01T10:00:02.000Z"),
      readAt: at(reached("read"), "2025-06-01T10:00:30.000Z"),
      failedAt: null,
      receivedAt: null,
    },
    createdAt: "2025-06-01T10:00:00.000Z",
    updatedAt: "2025-06-01T10:00:01.000Z",
    ...extra,
  };
};

const exampleContact = {
  id: "01970f29-ffe0-7a1b-9c2d-3e4f5a6b7c8d",
  firstName: "Ada",
  lastName: "Lovelace",
  city: "London",
  country: "GB",
  identities: [{ channel: "whatsapp", value: "+447700900123", status: "verified" }],
  tags: ["vip"],
  customFields: { plan: "gold" },
  consent: { whatsapp: { status: "opted_in", updatedAt: "2025-06-01T09:59:00.000Z" } },
  blocked: false,
  createdAt: "2025-06-01T09:59:00.000Z",
  updatedAt: "2025-06-01T09:59:00.000Z",
};

const exampleConversation = (status: string, assignee: { id: string; name: string } | null = null) => ({
  id: "01970f2a-5a10-7b2c-8d3e-4f5a6b7c8d9e",
  status,
  contactId: "01970f29-ffe0-7a1b-9c2d-3e4f5a6b7c8d",
  channel: "whatsapp",
  channelAccountId: "2d1c5e2a-8f0b-4c39-9d57-1b1f4c7a9e10",
  assignee,
  lastMessageAt: "2025-06-01T10:00:00.000Z",
  closedAt: status === "closed" ? "2025-06-01T11:00:00.000Z" : null,
  unreadCount: status === "closed" ? 0 : 1,
  createdAt: "2025-06-01T09:59:30.000Z",
  updatedAt: "2025-06-01T10:00:00.000Z",
});

const exampleEndpoint = {
  id: "01970f30-1111-7aaa-8bbb-cccccccccccc",
  url: "https://erp.example.internal/hooks/switchboard",
  description: "ERP",
  events: ["message.*"],
  enabled: false,
  disabledReason: "failing",
};

const exampleCampaign = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "01970f40-1c2d-7e3f-8a4b-5c6d7e8f9a0b",
  name: "June sale",
  status,
  channel: "whatsapp",
  channelAccountId: "2d1c5e2a-8f0b-4c39-9d57-1b1f4c7a9e10",
  templateId: "01970e00-0000-7000-8000-00000000c0de",
  audience: { type: "tags", tags: ["vip"], match: "any" },
  askValues: { "body.1": '{{contact.firstName | "friend"}}' },
  headerMediaId: null,
  scheduledAt: null,
  startedAt: "2025-06-01T10:00:00.000Z",
  completedAt: status === "completed" ? "2025-06-01T10:05:00.000Z" : null,
  canceledAt: status === "canceled" ? "2025-06-01T10:03:00.000Z" : null,
  createdAt: "2025-06-01T10:00:00.000Z",
  updatedAt: "2025-06-01T10:05:00.000Z",
  stats: {
    matched: 1200,
    sendable: 1130,
    excluded: { noIdentity: 20, noConsent: 40, blocked: 2, outsideWindow: 0, noPriorConversation: 8 },
    pending: status === "completed" ? 0 : 300,
    sent: 120,
    delivered: 410,
    read: status === "completed" ? 590 : 290,
    failed: 10,
    canceled: 0,
    replied: 64,
  },
  funnel: status === "completed" ? { sent: 1120, delivered: 1000, read: 590, replied: 64 } : { sent: 820, delivered: 700, read: 290, replied: 64 },
  cost: { estimated: { amount: "56.500000", unit: "USD" }, spent: { amount: "41.500000", unit: "USD" } },
  progress: status === "completed" ? 100 : 73,
  pauseReason: null,
  failureReason: null,
  ...extra,
});

const exampleRecord = {
  id: "01970f40-2222-7aaa-8bbb-000000000001",
  title: "Ada Lovelace — 20 seats",
  contactId: "01970f29-ffe0-7a1b-9c2d-3e4f5a6b7c8d",
  contactDeleted: false,
  conversationId: null,
  stageId: "6d1f2c3a-9b8e-8c7d-a6f5-e4d3c2b1a090",
  status: "open",
  value: { amount: "1500.000000", unit: "USD" },
  ownerId: "agent-7",
  expectedCloseDate: "2025-07-01",
  customFields: { seats: 20 },
  stageEnteredAt: "2025-06-01T10:00:00.000Z",
  wonAt: null,
  lostAt: null,
  createdAt: "2025-06-01T10:00:00.000Z",
  updatedAt: "2025-06-01T10:00:00.000Z",
};

const exampleTask = (status: string, extra: Record<string, unknown> = {}) => ({
  id: "01970f41-3333-7aaa-8bbb-000000000001",
  title: "Call back about the offer",
  notes: null,
  dueAt: "2025-06-03T09:00:00.000Z",
  remindAt: "2025-06-03T08:45:00.000Z",
  remindedAt: null,
  status,
  completedAt: status === "done" ? "2025-06-03T09:10:00.000Z" : null,
  recordId: exampleRecord.id,
  contactId: exampleRecord.contactId,
  assigneeId: "agent-7",
  createdAt: "2025-06-01T10:05:00.000Z",
  updatedAt: "2025-06-01T10:05:00.000Z",
  ...extra,
});

const exampleSocialPost = (status: "published" | "partially_published" | "failed") => ({
  id: "01970f40-1a2b-7c3d-8e4f-5a6b7c8d9e0f",
  status,
  text: "Summer sale starts today",
  media: [{ url: "https://cdn.example.com/summer.jpg", kind: "image" }],
  overrides: {},
  scheduledAt: "2025-06-01T09:00:00.000Z",
  publishedAt: status === "failed" ? null : "2025-06-01T09:00:04.000Z",
  requiresApproval: false,
  approvedAt: null,
  targets: [
    {
      accountId: "0193a4b2-0000-7000-8000-0000000000b1",
      platform: "instagram",
      status: status === "failed" ? "failed" : "published",
      externalId: status === "failed" ? null : "17895695668004550",
      url: status === "failed" ? null : "https://www.instagram.com/p/C7xYz/",
      error: status === "failed" ? { code: "190", message: "Invalid OAuth access token" } : null,
      attempts: 1,
      publishedAt: status === "failed" ? null : "2025-06-01T09:00:04.000Z",
    },
    {
      accountId: "0193a4b2-0000-7000-8000-0000000000b3",
      platform: "x",
      status: status === "published" ? "published" : "failed",
      externalId: status === "published" ? "1798765432109876543" : null,
      url: status === "published" ? "https://x.com/i/web/status/1798765432109876543" : null,
      error: status === "published" ? null : { code: "403", message: "You are not allowed to create a Tweet with duplicate content." },
      attempts: 1,
      publishedAt: status === "published" ? "2025-06-01T09:00:02.000Z" : null,
    },
  ],
  createdAt: "2025-05-30T12:00:00.000Z",
  updatedAt: "2025-06-01T09:00:04.000Z",
});

export const EVENT_TYPES: readonly EventTypeInfo[] = [
  {
    name: "message.sent",
    description: "A queued message was handed to the channel provider.",
    example: { message: exampleMessage("sent") },
    data: { message: ref("Message") },
  },
  {
    name: "message.delivered",
    description: "The provider reports the message delivered to the recipient's device.",
    example: { message: exampleMessage("delivered") },
    data: { message: ref("Message") },
  },
  {
    name: "message.read",
    description: "The recipient read the message (where the channel reports reads).",
    example: { message: exampleMessage("read") },
    data: { message: ref("Message") },
  },
  {
    name: "message.failed",
    description: "The message failed; `message.error` has {code, reason, message}. Reason USER_BLOCKED when a Telegram contact blocked the bot.",
    example: {
      message: exampleMessage("failed", {
        channel: "telegram",
        address: "blocked_42",
        priceType: "tg_text",
        unitPrice: "0.002000",
        charged: true,
        refunded: true,
        providerMessageId: null,
        error: { code: "PROVIDER_ERROR", reason: "USER_BLOCKED", message: "Forbidden: bot was blocked by the user" },
        statusTimes: {
          queuedAt: "2025-06-01T10:00:00.000Z",
          sentAt: null,
          deliveredAt: null,
          readAt: null,
          failedAt: "2025-06-01T10:00:01.000Z",
          receivedAt: null,
        },
      }),
    },
    data: { message: ref("Message") },
  },
  {
    name: "message.canceled",
    description: "A scheduled message was canceled (POST /messages/{id}/cancel) before it fell due; its price was refunded.",
    example: {
      message: exampleMessage("canceled", {
        providerMessageId: null,
        refunded: true,
        scheduledAt: "2025-06-02T07:00:00.000Z",
        statusTimes: { queuedAt: null, sentAt: null, deliveredAt: null, readAt: null, failedAt: null, receivedAt: null },
        updatedAt: "2025-06-01T15:30:00.000Z",
      }),
    },
    data: { message: ref("Message") },
  },
  {
    name: "message.received",
    description:
      'A contact wrote in (inbound message on a channel account). A tap on our reply buttons or list (DESIGN §16) arrives as `type: "interactive"` with `content.interactive: {replyId, replyTitle, inReplyTo}` (`inReplyTo`: our message id, null when unknown).',
    example: {
      message: exampleMessage("received", {
        direction: "inbound",
        type: "text",
        content: { text: "Hi, where is my order?" },
        priceType: "free",
        unitPrice: "0.000000",
        charged: false,
        metadata: {},
        templateId: null,
        providerMessageId: "wamid.HBgLMzE2MTIzNDU2NzgVAgASGBQ",
        statusTimes: { queuedAt: null, sentAt: null, deliveredAt: null, readAt: null, failedAt: null, receivedAt: "2025-06-01T09:59:58.000Z" },
      }),
    },
    data: { message: ref("Message") },
  },
  {
    name: "contact.created",
    description: "A contact was created (API upsert, inbound message or campaign import).",
    example: { contact: exampleContact },
    data: { contact: ref("Contact") },
  },
  {
    name: "contact.updated",
    description: "A contact's fields, identities, tags or custom fields changed.",
    example: { contact: exampleContact },
    data: { contact: ref("Contact") },
  },
  { name: "contact.deleted", description: "A contact was deleted.", example: { contact: exampleContact }, data: { contact: ref("Contact") } },
  {
    name: "contact.opted_in",
    description: "A contact gave consent on a channel.",
    example: { contact: exampleContact, channel: "whatsapp", source: "api" },
    data: CONSENT_DATA,
  },
  {
    name: "contact.opted_out",
    description: "A contact withdrew consent on a channel (API, inbound STOP, or a blocked bot).",
    example: {
      contact: { ...exampleContact, consent: { whatsapp: { status: "opted_out", updatedAt: "2025-06-02T08:00:00.000Z" } } },
      channel: "whatsapp",
      source: "inbound",
    },
    data: CONSENT_DATA,
  },
  {
    name: "contact.merged",
    description:
      "Another contact was merged into this one (POST /contacts/{id}/merge): its identities, conversations, messages and the rest now belong to `contactId`; `mergedContactId` is gone (404).",
    example: { contactId: "0193a4b2-6c1e-7b3a-9f4d-2a5b8c9d0e1f", mergedContactId: "0193a4b2-7d2f-7c4b-8a5e-3b6c9d0e1f2a" },
    data: { contactId: text("the contact that stays"), mergedContactId: text("the contact merged into it, which no longer exists") },
  },
  {
    name: "contact.source_attributed",
    description: "A contact was attributed to the source (link, QR code or ad) that first brought them (licensed module sources).",
    example: {
      contactId: "0193a4b2-6c1e-7b3a-9f4d-2a5b8c9d0e1f",
      source: {
        id: "0193a4b2-9a00-7c3a-8f4d-2a5b8c9d0e99",
        name: "Spring poster",
        type: "qr",
        channel: "whatsapp",
        channelAccountId: "0193a4b2-0000-7000-8000-000000000001",
        code: "spring24",
        link: "https://wa.me/15550100000?text=Hi!%20(ref%20spring24)",
        externalId: null,
        stats: null,
        createdAt: "2025-05-01T08:00:00.000Z",
        updatedAt: "2025-05-01T08:00:00.000Z",
      },
      attributedAt: "2025-06-01T12:00:00.000Z",
      via: "auto",
      referral: null,
      history: [{ fromSourceId: null, toSourceId: "0193a4b2-9a00-7c3a-8f4d-2a5b8c9d0e99", via: "auto", by: null, at: "2025-06-01T12:00:00.000Z" }],
    },
    data: {
      contactId: text("the contact's id"),
      source: { anyOf: [ref("Source"), { type: "null" }] },
      attributedAt: nullableText("when (ISO 8601)"),
      via: { type: "string", enum: ["auto", "manual"] },
      referral: {
        anyOf: [{ type: "object", additionalProperties: true }, { type: "null" }],
        description: "the provider's raw referral of an automatic attribution",
      },
      history: { type: "array", items: { type: "object" }, description: "each change of the contact's source: {fromSourceId, toSourceId, via, by, at}" },
    },
  },
  {
    name: "conversation.opened",
    description: "A conversation was opened or reopened.",
    example: { conversation: exampleConversation("open") },
    data: { conversation: ref("Conversation") },
  },
  {
    name: "conversation.assigned",
    description: "A conversation was assigned (or unassigned: assignee null).",
    example: { conversation: exampleConversation("open", { id: "agent-7", name: "Grace" }) },
    data: { conversation: ref("Conversation") },
  },
  {
    name: "conversation.closed",
    description: "A conversation was closed.",
    example: { conversation: exampleConversation("closed", { id: "agent-7", name: "Grace" }) },
    data: { conversation: ref("Conversation") },
  },
  {
    name: "campaign.started",
    description: "A campaign started sending (at once, or when its scheduledAt came).",
    example: { campaign: exampleCampaign("running") },
    data: { campaign: ref("Campaign") },
  },
  {
    name: "campaign.paused",
    description:
      "A campaign was paused: by POST /campaigns/{id}/pause (pauseReason MANUAL), for lack of balance (INSUFFICIENT_BALANCE) or because more than half of its last 100 sends failed (ERROR_RATE).",
    example: { campaign: exampleCampaign("paused", { pauseReason: "INSUFFICIENT_BALANCE" }) },
    data: { campaign: ref("Campaign") },
  },
  {
    name: "campaign.resumed",
    description: "A paused campaign was resumed; it continues with the recipients still pending.",
    example: { campaign: exampleCampaign("running") },
    data: { campaign: ref("Campaign") },
  },
  {
    name: "campaign.completed",
    description: "No recipient of the campaign is pending any more.",
    example: { campaign: exampleCampaign("completed") },
    data: { campaign: ref("Campaign") },
  },
  {
    name: "campaign.canceled",
    description: "A campaign was canceled; its pending recipients are canceled.",
    example: { campaign: exampleCampaign("canceled") },
    data: { campaign: ref("Campaign") },
  },
  {
    name: "campaign.failed",
    description: "A campaign cannot go on (its template was deleted or is no longer approved, or its channel account was removed); failureReason says which.",
    example: { campaign: exampleCampaign("failed", { failureReason: "TEMPLATE_UNAVAILABLE" }) },
    data: { campaign: ref("Campaign") },
  },
  {
    name: "template.status_changed",
    description:
      "The provider reviewed or re-rated a template: approved, rejected (rejectedReason says why), paused, disabled, or a new quality rating. From WhatsApp's template webhooks, from templates sync, and from the sandbox's review.",
    example: {
      template: {
        id: "01970f2a-7c00-7d1e-8f2a-3b4c5d6e7f80",
        channel: "whatsapp",
        channelAccountId: "2d1c5e2a-8f0b-4c39-9d57-1b1f4c7a9e10",
        name: "order_ready",
        language: "en",
        category: "utility",
        status: "approved",
        rejectedReason: null,
        quality: "UNKNOWN",
        source: "provider",
        components: [{ type: "body", text: "Hi {{1}}, order {{2}} is ready for pickup." }],
        params: ["body.1", "body.2"],
        updatedAt: "2025-06-05T10:00:02.000Z",
      },
      previousStatus: "pending",
      previousQuality: null,
    },
    data: {
      template: ref("Template"),
      previousStatus: text("the status before this change: approved | pending | rejected | paused | disabled"),
      previousQuality: nullableText("the quality rating before this change"),
    },
  },
  {
    name: "record.created",
    description: "A pipeline record was created (licensed pipeline module).",
    example: { record: exampleRecord },
    data: { record: ref("PipelineRecord") },
  },
  {
    name: "record.updated",
    description: "A pipeline record's fields changed (not its stage: see record.moved).",
    example: { record: exampleRecord },
    data: { record: ref("PipelineRecord") },
  },
  {
    name: "record.moved",
    description: "A pipeline record moved to another stage; a won or lost stage sets its status and wonAt/lostAt. `by` is the API key's name.",
    example: {
      record: {
        ...exampleRecord,
        stageId: "0c9b8a7d-6e5f-8a4b-9c3d-2e1f0a9b8c7d",
        status: "won",
        wonAt: "2025-06-10T12:00:00.000Z",
        stageEnteredAt: "2025-06-10T12:00:00.000Z",
      },
      fromStageId: exampleRecord.stageId,
      toStageId: "0c9b8a7d-6e5f-8a4b-9c3d-2e1f0a9b8c7d",
      reason: "signed",
      by: "crm",
    },
    data: {
      record: ref("PipelineRecord"),
      fromStageId: text("the stage it left"),
      toStageId: text("the stage it entered"),
      reason: nullableText("the caller's reason"),
      by: nullableText("the API key's name"),
    },
  },
  { name: "task.created", description: "A task or reminder was added.", example: { task: exampleTask("open") }, data: { task: ref("PipelineTask") } },
  {
    name: "task.due",
    description: "A task's remindAt has come (fires once per remindAt, also after a restart).",
    example: { task: exampleTask("open", { remindedAt: "2025-06-03T08:45:00.000Z" }) },
    data: { task: ref("PipelineTask") },
  },
  {
    name: "task.completed",
    description: "A task was completed (PATCH status done).",
    example: { task: exampleTask("done") },
    data: { task: ref("PipelineTask") },
  },
  {
    name: "social_post.published",
    description:
      "A social post finished publishing on every target (status published) or on some of them (partially_published); each target has its status, externalId and error.",
    example: { post: exampleSocialPost("partially_published") },
    data: { post: ref("SocialPost") },
  },
  {
    name: "social_post.failed",
    description: "A social post failed on every target; each target's error has {code, message}.",
    example: { post: exampleSocialPost("failed") },
    data: { post: ref("SocialPost") },
  },
  {
    name: "webhook.test",
    description: "Sent only to one endpoint by POST /webhooks/{id}/test.",
    example: { endpointId: exampleEndpoint.id, message: "Test event from Switchboard" },
    data: { endpointId: text("the endpoint tested"), message: text("a fixed text") },
  },
  {
    name: "webhook.endpoint_disabled",
    description: "An endpoint was disabled automatically: it answered 410 Gone, or every attempt failed for 5 days.",
    example: { endpoint: exampleEndpoint, reason: "failing", disabledAt: "2025-06-06T10:00:00.000Z" },
    data: {
      endpoint: {
        type: "object",
        description: "the endpoint as it is now (a part of GET /webhooks/{id})",
        required: ["id", "url", "description", "events", "enabled", "disabledReason"],
        properties: {
          id: text("the endpoint's id"),
          url: text("its URL"),
          description: nullableText("its description"),
          events: { type: "array", items: { type: "string" } },
          enabled: { type: "boolean", const: false },
          disabledReason: { type: "string", enum: ["gone", "failing"] },
        },
      },
      reason: { type: "string", enum: ["gone", "failing"], description: "gone: it answered 410; failing: every attempt failed for 5 days" },
      disabledAt: dateTime("when"),
    },
  },
];

const byName = new Map(EVENT_TYPES.map((e) => [e.name, e]));

export function isEventType(name: string): boolean {
  return byName.has(name);
}

export function eventTypeNames(): string[] {
  return EVENT_TYPES.map((e) => e.name);
}
