/** The shapes of the public API the console reads (docs/api.md); only the fields it uses. */
export interface Money {
  amount: string;
  unit: string;
}
export interface Me {
  key: { id: string; name: string; prefix: string; scopes: string[]; expiresAt: string | null };
  company: { id: string; slug: string; name: string; balance: Money };
}
export interface Channel {
  id: string;
  channel: string;
  provider: string;
  name: string;
  default: boolean;
  status: string;
  webhookUrl: string;
  /** null for a key without messages:read */
  health: {
    status: "ok" | "degraded" | "failing" | "unknown";
    lastSentAt: string | null;
    lastFailedAt: string | null;
    lastFailureReason: string | null;
    recentSent: number;
    recentFailed: number;
  } | null;
}
export interface MessageStats {
  interval: "hour" | "day";
  buckets: ({ start: string; total: number } & Record<"queued" | "sent" | "delivered" | "read" | "failed" | "received", number>)[];
}
export interface Backlog {
  queued: { total: number; byChannel: Record<string, number>; oldestCreatedAt: string | null };
  failedLast24h: number;
}
export interface Message {
  id: string;
  status: string;
  direction: "inbound" | "outbound";
  channel: string;
  type: string;
  content: {
    text?: string;
    template?: { name?: string; params?: Record<string, string> };
    subject?: string;
    /** Outbound: the buttons or list sent; inbound: the tap (DESIGN §16). */
    interactive?: { body?: { text?: string }; replyId?: string; replyTitle?: string | null };
    [k: string]: unknown;
  };
  error: { code: string; reason?: string; message: string } | null;
  statusTimes: { receivedAt: string | null };
  contactId: string;
  conversationId: string;
  address: string;
  createdAt: string;
}
export interface Conversation {
  id: string;
  status: "open" | "closed";
  contactId: string;
  channel: string;
  channelAccountId: string;
  assignee: { id: string; name: string | null } | null;
  lastMessageAt: string | null;
  unreadCount: number;
  createdAt: string;
}
export interface ConversationDetail extends Conversation {
  contact: { id: string; firstName: string | null; lastName: string | null; blocked: boolean };
  lastMessage: Message | null;
  window: { kind: string; open: boolean; expiresAt: string | null; lastInboundAt: string | null };
  notes: { id: string; text: string; author: string | null; createdAt: string }[];
}
export interface Template {
  id: string;
  channel: string;
  channelAccountId: string;
  name: string;
  language: string;
  category: string;
  status: string;
  components: { type: string; text?: string; [k: string]: unknown }[];
  params: string[];
}
export interface Contact {
  id: string;
  firstName: string | null;
  lastName: string | null;
  city: string | null;
  country: string | null;
  identities: { channel: string; value: string; status: string }[];
  tags: string[];
  consent: Record<string, { status: string; updatedAt: string | null }>;
  blocked: boolean;
  createdAt: string;
}
export interface ContactImport {
  id: string;
  status: "queued" | "running" | "completed" | "failed" | "cancelled";
  processed: number;
  created: number;
  updated: number;
  failed: number;
  errors?: { row: number; pointer: string; message: string }[];
  error: string | null;
}
export interface Tag {
  id: string;
  name: string;
  contactCount: number;
}
export type Excluded = Record<string, number>;
export interface Estimate {
  channel: string;
  matched: number;
  sendable: number;
  excluded: Excluded;
  unitPrice: string;
  estimatedCost: Money;
  balance: Money;
  sufficientBalance: boolean;
  dailyDmLimit: number | null;
}
export interface Campaign {
  id: string;
  name: string;
  status: string;
  channel: string;
  templateId: string;
  scheduledAt: string | null;
  startedAt: string | null;
  completedAt: string | null;
  createdAt: string;
  pauseReason: string | null;
  failureReason: string | null;
  stats: {
    matched: number;
    sendable: number;
    excluded: Excluded;
    pending: number;
    sent: number;
    delivered: number;
    read: number;
    failed: number;
    canceled: number;
    replied: number;
  };
  cost: { estimated: Money; spent: Money };
  progress: number;
}
export interface Webhook {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
}
export interface Delivery {
  id: string;
  eventType: string;
  status: string;
  attemptCount: number;
  nextAttemptAt: string | null;
  lastStatusCode: number | null;
  attempts: { id: string; trigger: string; attemptedAt: string; statusCode: number | null; durationMs: number | null; error: string | null }[];
  createdAt: string;
}
export interface SocialPost {
  id: string;
  status: string;
  text: string;
  scheduledAt: string | null;
  publishedAt: string | null;
  createdAt: string;
  targets: { accountId: string; platform: string; status: string }[];
}
export interface LedgerEntry {
  id: string;
  kind: "credit" | "debit" | "refund";
  amount: string;
  createdAt: string;
}
