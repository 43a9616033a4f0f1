/**
 * The seed's channel rules, as one table. The messaging engine reads this; nothing else branches on the
 * channel name. Sources: seed "Channel rules" and "Limits", DESIGN §5.
 *
 * window.kind:
 *   - "since_last_inbound": free-form sends need the contact's last inbound message on this account (by
 *     the provider's timestamp) to be younger than `hours`; `appliesTo` lists the message types bound by it.
 *   - "contact_wrote_first": the contact must have written to this account at least once (Telegram bots
 *     cannot start a conversation; X needs a prior DM conversation).
 *   - "none": no window (e-mail).
 * price: priceType per message type; a type absent here is free ("0.000000", charged false).
 */
import type { Channel } from "./channel.types";

export type MessageType = "text" | "media" | "template" | "email" | "interactive";

export interface ChannelRule {
  types: readonly MessageType[];
  /** Max characters of `text` (null: no limit beyond the request size). */
  textLimit: number | null;
  window:
    | { kind: "since_last_inbound"; hours: number; appliesTo: readonly MessageType[] }
    | { kind: "contact_wrote_first"; appliesTo: readonly MessageType[] }
    | { kind: "none" };
  /** priceType by message type; `templateWithMedia` is used for a template whose header carries media. */
  price: Partial<Record<MessageType | "templateWithMedia", string>>;
  /** Per-account daily DM limit applies (value from the account's `daily_dm_limit` setting). */
  dailyDmLimit: boolean;
  /** Which `to` field addresses a recipient on this channel besides contactId. */
  address: "phone" | "email" | "handle";
  /**
   * Only the contact can start a conversation (X, Telegram, TikTok): a contact who never wrote to the account
   * is refused as `noPriorConversation`, one whose window has since closed as `outsideWindow` (DESIGN §9).
   */
  contactStarts: boolean;
  /** Default `[[channels]] max_per_second` of a real provider's account (sandbox accounts: unlimited). */
  maxPerSecond: number;
  /**
   * A send is addressed through the conversation of the contact's last inbound message (TikTok: the
   * `conversation_id` it came with, kept per contact and account): the dispatch reads it only for these.
   */
  conversationRef: boolean;
  /** Max bytes of an interactive button / row id (Telegram's callback_data: 64 bytes); null: the 256 characters of DESIGN §16. */
  interactiveIdBytes: number | null;
  /** A list of several sections needs a title on each (WhatsApp's interactive list; the others flatten the rows). */
  sectionTitlesWhenSeveral: boolean;
}

const FREE_FORM = ["text", "media", "interactive"] as const;
const ALL_DM = ["text", "media", "template", "interactive"] as const;
/** TikTok has no buttons nor quick replies (DESIGN §16: `interactive` answers 422 CHANNEL_UNSUPPORTED there). */
const NO_INTERACTIVE = ["text", "media", "template"] as const;

export const CHANNEL_RULES: Record<Channel, ChannelRule> = {
  //        allowed types   text limit  window                                                                 price                                                     daily DM limit
  whatsapp: {
    types: ALL_DM,
    textLimit: 4096,
    window: { kind: "since_last_inbound", hours: 24, appliesTo: FREE_FORM },
    price: { template: "wa_template_text" },
    dailyDmLimit: false,
    address: "phone",
    contactStarts: false,
    maxPerSecond: 80,
    conversationRef: false,
    interactiveIdBytes: null,
    sectionTitlesWhenSeveral: true,
  },
  instagram: {
    types: ALL_DM,
    textLimit: 1000,
    window: { kind: "since_last_inbound", hours: 24, appliesTo: ALL_DM },
    price: {},
    dailyDmLimit: false,
    address: "handle",
    contactStarts: false,
    maxPerSecond: 20,
    conversationRef: false,
    interactiveIdBytes: null,
    sectionTitlesWhenSeveral: false,
  },
  messenger: {
    types: ALL_DM,
    textLimit: 2000,
    window: { kind: "since_last_inbound", hours: 24, appliesTo: ALL_DM },
    price: {},
    dailyDmLimit: false,
    address: "handle",
    contactStarts: false,
    maxPerSecond: 20,
    conversationRef: false,
    interactiveIdBytes: null,
    sectionTitlesWhenSeveral: false,
  },
  x: {
    types: ALL_DM,
    textLimit: 10_000,
    window: { kind: "contact_wrote_first", appliesTo: ALL_DM },
    price: { template: "x_dm_campaign" },
    dailyDmLimit: true,
    address: "handle",
    contactStarts: true,
    maxPerSecond: 20,
    conversationRef: false,
    interactiveIdBytes: null,
    sectionTitlesWhenSeveral: false,
  },
  tiktok: {
    types: NO_INTERACTIVE,
    textLimit: 6000,
    window: { kind: "since_last_inbound", hours: 48, appliesTo: ALL_DM },
    price: {},
    dailyDmLimit: false,
    address: "handle",
    contactStarts: true,
    maxPerSecond: 20,
    conversationRef: true,
    interactiveIdBytes: null,
    sectionTitlesWhenSeveral: false,
  },
  telegram: {
    types: ALL_DM,
    textLimit: 4096,
    window: { kind: "contact_wrote_first", appliesTo: ALL_DM },
    price: { template: "tg_text", templateWithMedia: "tg_media" },
    dailyDmLimit: false,
    address: "handle",
    contactStarts: true,
    maxPerSecond: 20,
    conversationRef: false,
    interactiveIdBytes: 64,
    sectionTitlesWhenSeveral: false,
  },
  email: {
    types: ["email", "template"],
    textLimit: null,
    window: { kind: "none" },
    price: { template: "email_campaign" },
    dailyDmLimit: false,
    address: "email",
    contactStarts: false,
    maxPerSecond: 20,
    conversationRef: false,
    interactiveIdBytes: null,
    sectionTitlesWhenSeveral: false,
  },
};

/** Metadata limits (seed "Limits"). */
export const METADATA_LIMITS = { maxKeys: 20, maxKeyLength: 40, maxValueLength: 500 } as const;

/** priceType of free messages (the seed shows priced types only; free ones are reported with this). */
export const FREE_PRICE_TYPE = "free";
