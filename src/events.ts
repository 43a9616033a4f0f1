/**
 * The app's events, one entry each: its name, what it means, an example `data` payload (event-examples.ts), the
 * JSON Schema of `data` (served at GET /webhooks/event-types, in the OpenAPI document's `webhooks` section and
 * docs/api.md) and the type of `data` (`event<Type>(…)`). From it: `EventMap` (name → payload type) and the
 * event bus typed by it. Emitters and subscribers are checked by the compiler: an unknown name or a wrong
 * payload does not compile, and a subscriber gets the payload of the events it subscribed to (`events.on(name,
 * …)`, or narrowing `event.type` of an event from `subscribe`). A new event type is one entry here.
 *
 * Why here, at the top beside wire.ts: the payloads are the features' own views (a message as GET
 * /messages/{id} shows it, a contact, a campaign …), so the catalogue must see the modules' types, while the
 * platform — the bus, and the OpenAPI document that is handed the catalogue (app.ts) — imports no module. The
 * modules import only types from here, and the webhooks module the catalogue's values; this file imports only
 * types from modules (erased at run time: no import cycle).
 */
import type { Contact } from "./modules/contacts/contacts.model";
import type { conversationView } from "./modules/conversations/conversations.views";
import type { CampaignModel } from "./modules/campaigns/campaigns.model";
import type { messageView } from "./modules/messages/messages.views";
import type { RecordView, TaskView } from "./modules/pipeline/pipeline.views";
import type { SocialPostModel } from "./modules/social/social.model";
import type { ContactSourceModel } from "./modules/sources/sources.model";
import type { templateView } from "./modules/templates/templates.model";
import type { DomainEvent as EventOfMap, EventBus as Bus, EventSubscriber, EventTypeInfo } from "./platform/events/events";
import {
  exampleCampaign,
  exampleContact,
  exampleConversation,
  exampleEndpoint,
  exampleMessage,
  exampleRecord,
  exampleSocialPost,
  exampleTask,
} from "./event-examples";

/** A message as GET /messages/{id} shows it. */
type MessageData = { message: ReturnType<typeof messageView> };
type ContactData = { contact: Contact };
/**
 * Consent given or withdrawn on one channel (a Channel; stored as text, so emitters hold a string); `source`:
 * what changed it (api, inbound_keyword, import …).
 */
type ConsentData = { contact: Contact; channel: string; source: string };
type ConversationData = { conversation: ReturnType<typeof conversationView> };
/** The campaign as GET /campaigns/{id} shows it, at the moment of the change. */
type CampaignData = { campaign: typeof CampaignModel.static };
type RecordData = { record: RecordView };
type TaskData = { task: TaskView };
type SocialPostData = { post: typeof SocialPostModel.static };

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

/** A catalogue entry whose `data` has the type `D` (for the compiler only: nothing of it exists at run time). */
type Entry<D extends object> = Omit<EventTypeInfo, "name"> & { readonly payload?: D };
const event = <D extends object>(entry: Omit<EventTypeInfo, "name">): Entry<D> => entry;

export const EVENT_CATALOGUE = {
  "message.sent": event<MessageData>({
    description: "A queued message was handed to the channel provider.",
    example: { message: exampleMessage("sent") },
    data: { message: ref("Message") },
  }),
  "message.delivered": event<MessageData>({
    description: "The provider reports the message delivered to the recipient's device.",
    example: { message: exampleMessage("delivered") },
    data: { message: ref("Message") },
  }),
  "message.read": event<MessageData>({
    description: "The recipient read the message (where the channel reports reads).",
    example: { message: exampleMessage("read") },
    data: { message: ref("Message") },
  }),
  "message.failed": event<MessageData>({
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
  }),
  "message.canceled": event<MessageData>({
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
  }),
  "message.received": event<MessageData>({
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
  }),
  "contact.created": event<ContactData>({
    description: "A contact was created (API upsert, inbound message or campaign import).",
    example: { contact: exampleContact },
    data: { contact: ref("Contact") },
  }),
  "contact.updated": event<ContactData>({
    description: "A contact's fields, identities, tags or custom fields changed.",
    example: { contact: exampleContact },
    data: { contact: ref("Contact") },
  }),
  "contact.deleted": event<ContactData>({ description: "A contact was deleted.", example: { contact: exampleContact }, data: { contact: ref("Contact") } }),
  "contact.opted_in": event<ConsentData>({
    description: "A contact gave consent on a channel.",
    example: { contact: exampleContact, channel: "whatsapp", source: "api" },
    data: CONSENT_DATA,
  }),
  "contact.opted_out": event<ConsentData>({
    description: "A contact withdrew consent on a channel (API, inbound STOP, or a blocked bot).",
    example: {
      contact: { ...exampleContact, consent: { whatsapp: { status: "opted_out", updatedAt: "2025-06-02T08:00:00.000Z" } } },
      channel: "whatsapp",
      source: "inbound",
    },
    data: CONSENT_DATA,
  }),
  "contact.merged": event<{ contactId: string; mergedContactId: string }>({
    description:
      "Another contact was merged into this one (POST /contacts/{id}/merge): its identities, conversations, messages and the rest now belong to `contactId`; `mergedContactId` is gone (404).",
    example: { contactId: "0193a4b2-6c1e-7b3a-9f4d-2a5b8c9d0e1f", mergedContactId: "0193a4b2-7d2f-7c4b-8a5e-3b6c9d0e1f2a" },
    data: { contactId: text("the contact that stays"), mergedContactId: text("the contact merged into it, which no longer exists") },
  }),
  "contact.source_attributed": event<{ contactId: string } & NonNullable<typeof ContactSourceModel.static>>({
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
  }),
  /** `reopened`: a closed conversation opened again. */
  "conversation.opened": event<ConversationData & { reopened?: true }>({
    description: "A conversation was opened or reopened.",
    example: { conversation: exampleConversation("open") },
    data: { conversation: ref("Conversation") },
  }),
  "conversation.assigned": event<ConversationData>({
    description: "A conversation was assigned (or unassigned: assignee null).",
    example: { conversation: exampleConversation("open", { id: "agent-7", name: "Grace" }) },
    data: { conversation: ref("Conversation") },
  }),
  "conversation.closed": event<ConversationData>({
    description: "A conversation was closed.",
    example: { conversation: exampleConversation("closed", { id: "agent-7", name: "Grace" }) },
    data: { conversation: ref("Conversation") },
  }),
  "campaign.started": event<CampaignData>({
    description: "A campaign started sending (at once, or when its scheduledAt came).",
    example: { campaign: exampleCampaign("running") },
    data: { campaign: ref("Campaign") },
  }),
  "campaign.paused": event<CampaignData>({
    description:
      "A campaign was paused: by POST /campaigns/{id}/pause (pauseReason MANUAL), for lack of balance (INSUFFICIENT_BALANCE) or because more than half of its last 100 sends failed (ERROR_RATE).",
    example: { campaign: exampleCampaign("paused", { pauseReason: "INSUFFICIENT_BALANCE" }) },
    data: { campaign: ref("Campaign") },
  }),
  "campaign.resumed": event<CampaignData>({
    description: "A paused campaign was resumed; it continues with the recipients still pending.",
    example: { campaign: exampleCampaign("running") },
    data: { campaign: ref("Campaign") },
  }),
  "campaign.completed": event<CampaignData>({
    description: "No recipient of the campaign is pending any more.",
    example: { campaign: exampleCampaign("completed") },
    data: { campaign: ref("Campaign") },
  }),
  "campaign.canceled": event<CampaignData>({
    description: "A campaign was canceled; its pending recipients are canceled.",
    example: { campaign: exampleCampaign("canceled") },
    data: { campaign: ref("Campaign") },
  }),
  "campaign.failed": event<CampaignData>({
    description: "A campaign cannot go on (its template was deleted or is no longer approved, or its channel account was removed); failureReason says which.",
    example: { campaign: exampleCampaign("failed", { failureReason: "TEMPLATE_UNAVAILABLE" }) },
    data: { campaign: ref("Campaign") },
  }),
  "template.status_changed": event<{ template: ReturnType<typeof templateView>; previousStatus: string; previousQuality: string | null }>({
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
  }),
  "record.created": event<RecordData>({
    description: "A pipeline record was created (licensed pipeline module).",
    example: { record: exampleRecord },
    data: { record: ref("PipelineRecord") },
  }),
  "record.updated": event<RecordData>({
    description: "A pipeline record's fields changed (not its stage: see record.moved).",
    example: { record: exampleRecord },
    data: { record: ref("PipelineRecord") },
  }),
  "record.moved": event<RecordData & { fromStageId: string; toStageId: string; reason: string | null; by: string | null }>({
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
  }),
  "task.created": event<TaskData>({
    description: "A task or reminder was added.",
    example: { task: exampleTask("open") },
    data: { task: ref("PipelineTask") },
  }),
  "task.due": event<TaskData>({
    description: "A task's remindAt has come (fires once per remindAt, also after a restart).",
    example: { task: exampleTask("open", { remindedAt: "2025-06-03T08:45:00.000Z" }) },
    data: { task: ref("PipelineTask") },
  }),
  "task.completed": event<TaskData>({
    description: "A task was completed (PATCH status done).",
    example: { task: exampleTask("done") },
    data: { task: ref("PipelineTask") },
  }),
  "social_post.published": event<SocialPostData>({
    description:
      "A social post finished publishing on every target (status published) or on some of them (partially_published); each target has its status, externalId and error.",
    example: { post: exampleSocialPost("partially_published") },
    data: { post: ref("SocialPost") },
  }),
  "social_post.failed": event<SocialPostData>({
    description: "A social post failed on every target; each target's error has {code, message}.",
    example: { post: exampleSocialPost("failed") },
    data: { post: ref("SocialPost") },
  }),
  /** Not on the bus: POST /webhooks/{id}/test writes it for one endpoint. */
  "webhook.test": event<{ endpointId: string; message: string }>({
    description: "Sent only to one endpoint by POST /webhooks/{id}/test.",
    example: { endpointId: exampleEndpoint.id, message: "Test event from Switchboard" },
    data: { endpointId: text("the endpoint tested"), message: text("a fixed text") },
  }),
  "webhook.endpoint_disabled": event<{
    endpoint: { id: string; url: string; description: string | null; events: string[]; enabled: false; disabledReason: "gone" | "failing" };
    reason: "gone" | "failing";
    disabledAt: string;
  }>({
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
  }),
} satisfies Record<string, Entry<object>>;

/** Every event type's name. */
export type EventName = keyof typeof EVENT_CATALOGUE;
/** Event name → its `data`. */
export type EventMap = { [K in EventName]: NonNullable<(typeof EVENT_CATALOGUE)[K]["payload"]> };

/** The catalogue as a list, in its order (the order of GET /webhooks/event-types and of the docs). */
export const EVENT_TYPES: readonly EventTypeInfo[] = Object.entries(EVENT_CATALOGUE).map(([name, { description, example, data }]) => ({
  name,
  description,
  example,
  data,
}));

export function isEventType(name: string): name is EventName {
  return Object.hasOwn(EVENT_CATALOGUE, name);
}

export function eventTypeNames(): EventName[] {
  return Object.keys(EVENT_CATALOGUE) as EventName[];
}

/** The event names that start with `P` (`EventNameOf<"campaign.">`). */
export type EventNameOf<P extends string> = Extract<EventName, `${P}${string}`>;
/** The app's event bus. */
export type EventBus = Bus<EventMap>;
/** An event of the app (of one of the types `K`): `event.type` narrows `event.data`. */
export type DomainEvent<K extends EventName = EventName> = EventOfMap<EventMap, K>;
/** A subscriber to the app's events (of the types `K`). */
export type Subscriber<K extends EventName = EventName> = EventSubscriber<EventMap, K>;
