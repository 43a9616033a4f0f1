/**
 * The example payloads of the event catalogue (src/events.ts): what GET /webhooks/event-types, the OpenAPI
 * `webhooks` section and docs/api.md show for each event type. The tests check them against real events.
 */

export const exampleMessage = (status: string, extra: Record<string, unknown> = {}) => {
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

export const exampleContact = {
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

export const exampleConversation = (status: string, assignee: { id: string; name: string } | null = null) => ({
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

export const exampleEndpoint = {
  id: "01970f30-1111-7aaa-8bbb-cccccccccccc",
  url: "https://erp.example.internal/hooks/switchboard",
  description: "ERP",
  events: ["message.*"],
  enabled: false,
  disabledReason: "failing",
};

export const exampleCampaign = (status: string, extra: Record<string, unknown> = {}) => ({
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

export const exampleRecord = {
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

export const exampleTask = (status: string, extra: Record<string, unknown> = {}) => ({
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

export const exampleSocialPost = (status: "published" | "partially_published" | "failed") => ({
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
