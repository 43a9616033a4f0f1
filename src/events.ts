/**
 * The app's events: every event name with the type of its `data` payload (EventMap), and the event bus typed
 * by it. Emitters and subscribers are checked by the compiler: an unknown name or a wrong payload does not
 * compile, and a subscriber gets the payload of the events it subscribed to (`events.on(name, …)`, or
 * narrowing `event.type` of an event from `subscribe`).
 *
 * Why here, at the top beside wire.ts: the payloads are the features' own views (a message as GET
 * /messages/{id} shows it, a contact, a campaign …), so the map must see the modules' types, while the
 * platform — the bus and the catalogue of descriptions, examples and schemas — imports no module. The bus is
 * generic over a map; this file gives it the app's. The modules import only types from here (erased at run
 * time: no import cycle).
 *
 * A new event type: its entry in the catalogue (src/platform/events/event-types.ts: description, example, JSON
 * schema — GET /webhooks/event-types and the OpenAPI `webhooks` section) and its payload type below. The map
 * must have exactly the catalogue's names (`Exactly` below): the compiler refuses either one without the other.
 */
import type { Contact } from "./modules/contacts/contacts.model";
import type { conversationView } from "./modules/conversations/conversations.service";
import type { CampaignModel } from "./modules/campaigns/campaigns.model";
import type { messageView } from "./modules/messages/messages.views";
import type { RecordView, TaskView } from "./modules/pipeline/pipeline.views";
import type { SocialPostModel } from "./modules/social/social.model";
import type { ContactSourceModel } from "./modules/sources/sources.model";
import type { templateView } from "./modules/templates/templates.model";
import type { DomainEvent as EventOfMap, EventBus as Bus, EventSubscriber } from "./platform/events/events";
import type { EventName } from "./platform/events/event-types";

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

/** Event name → its `data`. */
export type EventMap = Exactly<
  EventName,
  {
    "message.sent": MessageData;
    "message.delivered": MessageData;
    "message.read": MessageData;
    "message.failed": MessageData;
    "message.canceled": MessageData;
    "message.received": MessageData;
    "contact.created": ContactData;
    "contact.updated": ContactData;
    "contact.deleted": ContactData;
    "contact.opted_in": ConsentData;
    "contact.opted_out": ConsentData;
    "contact.merged": { contactId: string; mergedContactId: string };
    "contact.source_attributed": { contactId: string } & NonNullable<typeof ContactSourceModel.static>;
    /** `reopened`: a closed conversation opened again. */
    "conversation.opened": ConversationData & { reopened?: true };
    "conversation.assigned": ConversationData;
    "conversation.closed": ConversationData;
    "campaign.started": CampaignData;
    "campaign.paused": CampaignData;
    "campaign.resumed": CampaignData;
    "campaign.completed": CampaignData;
    "campaign.canceled": CampaignData;
    "campaign.failed": CampaignData;
    "template.status_changed": { template: ReturnType<typeof templateView>; previousStatus: string; previousQuality: string | null };
    "record.created": RecordData;
    "record.updated": RecordData;
    "record.moved": RecordData & { fromStageId: string; toStageId: string; reason: string | null; by: string | null };
    "task.created": TaskData;
    "task.due": TaskData;
    "task.completed": TaskData;
    "social_post.published": SocialPostData;
    "social_post.failed": SocialPostData;
    /** Not on the bus: POST /webhooks/{id}/test writes it for one endpoint. */
    "webhook.test": { endpointId: string; message: string };
    "webhook.endpoint_disabled": {
      endpoint: { id: string; url: string; description: string | null; events: string[]; enabled: false; disabledReason: "gone" | "failing" };
      reason: "gone" | "failing";
      disabledAt: string;
    };
  }
>;

export type { EventName };
/** The event names that start with `P` (`EventNameOf<"campaign.">`). */
export type EventNameOf<P extends string> = Extract<EventName, `${P}${string}`>;
/** The app's event bus. */
export type EventBus = Bus<EventMap>;
/** An event of the app (of one of the types `K`): `event.type` narrows `event.data`. */
export type DomainEvent<K extends EventName = EventName> = EventOfMap<EventMap, K>;
/** A subscriber to the app's events (of the types `K`). */
export type Subscriber<K extends EventName = EventName> = EventSubscriber<EventMap, K>;

/**
 * `M` when its keys are exactly `Names`; a name missing from `M`, or a key that is no name, is a compile error
 * here (the map and the catalogue cannot drift apart).
 */
type Exactly<Names extends string, M extends Record<Names, object> & Record<Exclude<keyof M, Names>, never>> = M;
