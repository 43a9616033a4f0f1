/**
 * A message row's shapes: the API's Message (messageView), the seed's answer to POST /messages (acceptedView),
 * and a new row with every field at its starting value (newMessageRow). Pure: no storage, no rules.
 */
import type { Channel, FailureReason } from "../../channels/channel.types";
import { FREE_PRICE_TYPE } from "../../channels/channel.rules";
import { formatMicros } from "../../platform/money";
import type { MessageRecord } from "./messages.model";
import type { MessageRow } from "./messages.repository";

const iso = (d: Date | null | undefined) => d?.toISOString() ?? null;

/** Stored as text; the values are the closed sets of messages.model.ts. */
type MessageStatus = (typeof MessageRecord.static)["status"];
type PriceType = (typeof MessageRecord.static)["priceType"];

export function messageView(m: MessageRow) {
  return {
    id: m.id,
    status: m.status as MessageStatus,
    direction: m.direction as "outbound" | "inbound",
    conversationId: m.conversationId,
    contactId: m.contactId,
    channel: m.channel as Channel,
    channelAccountId: m.channelAccountId,
    type: m.type,
    content: m.content,
    address: m.address,
    priceType: m.priceType as PriceType,
    unitPrice: formatMicros(m.unitPrice),
    charged: m.charged,
    refunded: m.refunded,
    metadata: m.metadata,
    templateId: m.templateId,
    replyToMessageId: m.replyToMessageId,
    providerMessageId: m.providerMessageId,
    campaignId: m.campaignId,
    error: m.errorReason ? { code: m.errorCode ?? m.errorReason, reason: m.errorReason as FailureReason, message: m.errorMessage ?? "" } : null,
    scheduledAt: iso(m.scheduledAt),
    statusTimes: {
      queuedAt: queuedAt(m),
      sentAt: iso(m.sentAt),
      deliveredAt: iso(m.deliveredAt),
      readAt: iso(m.readAt),
      failedAt: iso(m.failedAt),
      receivedAt: m.direction === "inbound" ? iso(m.providerTimestamp ?? m.createdAt) : null,
    },
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

/** A message sent at once was queued at acceptance; one sent later when it fell due (never, while scheduled or canceled). */
function queuedAt(m: MessageRow): string | null {
  if (m.direction !== "outbound") return null;
  if (!m.scheduledAt) return iso(m.createdAt);
  return m.status === "scheduled" || m.status === "canceled" ? null : iso(m.scheduledAt);
}

/** The seed's Message (POST /messages): exactly these fields. */
export function acceptedView(m: MessageRow) {
  return {
    id: m.id,
    status: m.status as MessageStatus,
    conversationId: m.conversationId,
    contactId: m.contactId,
    channel: m.channel as Channel,
    priceType: m.priceType,
    unitPrice: formatMicros(m.unitPrice),
    charged: m.charged,
    metadata: m.metadata,
  };
}

type MessageFields = Pick<
  MessageRow,
  "id" | "companyId" | "conversationId" | "contactId" | "channel" | "channelAccountId" | "direction" | "type" | "content" | "address" | "status" | "createdAt"
> &
  Partial<MessageRow>;

/** A new message row: the given fields, everything else at its starting value (free, no status times). */
export function newMessageRow(f: MessageFields): MessageRow {
  return {
    priceType: FREE_PRICE_TYPE,
    unitPrice: 0,
    charged: false,
    refunded: false,
    metadata: {},
    templateId: null,
    replyToMessageId: null,
    providerMessageId: null,
    errorCode: null,
    errorReason: null,
    errorMessage: null,
    providerTimestamp: null,
    sentAt: null,
    deliveredAt: null,
    readAt: null,
    failedAt: null,
    updatedAt: f.createdAt,
    apiKeyId: null,
    campaignId: null,
    leaseUntil: null,
    leaseToken: null,
    scheduledAt: null,
    ...f,
  };
}
