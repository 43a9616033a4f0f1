/** Request and response schemas of /messages (they feed validation and the OpenAPI document). */
import { t } from "elysia";
import { CHANNEL_RULES, FREE_PRICE_TYPE } from "../../channels/channel.rules";
import { CHANNELS, FAILURE_REASONS } from "../../channels/channel.types";
import { named } from "../../platform/http/schemas";

/** Every priceType a message can have: the channel rules' priced types, and `free`. */
export const PRICE_TYPES = [...new Set(Object.values(CHANNEL_RULES).flatMap((r) => Object.values(r.price))), FREE_PRICE_TYPE];
const PriceType = t.UnionEnum(PRICE_TYPES as [string, ...string[]], { description: "the price category (`[billing.prices]`); `free` for unpriced messages" });

/** "4096 (whatsapp, telegram), 1000 (instagram), …": the seed's text limits, from the channel rules. */
const textLimits = Object.entries(
  Object.groupBy(
    CHANNELS.filter((c) => CHANNEL_RULES[c].textLimit),
    (c) => String(CHANNEL_RULES[c].textLimit),
  ),
)
  .map(([limit, channels]) => `${Number(limit).toLocaleString("en-US")} (${channels!.join(", ")})`)
  .join(", ");

/**
 * Rules the send checks (messages.request.ts, with its own pointers) that a client generator and a JSON
 * Schema validator can also read. NB! TypeBox's validator ignores `oneOf`/`anyOf` given as options of a
 * t.Object, so these only document; `minProperties` it does check.
 */
const exactlyOne = (a: string, b: string) => ({ oneOf: [{ required: [a] }, { required: [b] }] });

const Uuid = t.String({ format: "uuid" });

/** How far ahead a message may be scheduled (DESIGN §18). */
export const SCHEDULE_LIMITS = { maxDays: 30 } as const;

export const ChannelEnum = t.Union(
  CHANNELS.map((c) => t.Literal(c)),
  { description: "sending channel" },
);

/** The limits of DESIGN §16, checked by messages.request.ts with a pointer each. */
export const INTERACTIVE_LIMITS = {
  buttons: { min: 1, max: 3 },
  buttonTitle: 20,
  id: 256,
  rows: { min: 1, max: 10 },
  rowTitle: 24,
  rowDescription: 72,
  listButton: 20,
  headerFooter: 60,
} as const;

const InteractiveButton = t.Object({
  id: t.String({ minLength: 1, description: `returned as replyId when tapped; at most ${INTERACTIVE_LIMITS.id} characters (64 bytes on telegram)` }),
  title: t.String({ minLength: 1, description: `at most ${INTERACTIVE_LIMITS.buttonTitle} characters` }),
});
const interactiveCommon = {
  header: t.Optional(t.Object({ text: t.String({ minLength: 1, description: `at most ${INTERACTIVE_LIMITS.headerFooter} characters` }) })),
  body: t.Object({ text: t.String({ minLength: 1, description: "at most the channel's text limit" }) }),
  footer: t.Optional(t.Object({ text: t.String({ minLength: 1, description: `at most ${INTERACTIVE_LIMITS.headerFooter} characters` }) })),
};

/** Reply buttons (DESIGN §16). */
export const InteractiveButtons = named(
  "InteractiveButtons",
  t.Object(
    {
      kind: t.Literal("buttons"),
      ...interactiveCommon,
      buttons: t.Array(InteractiveButton, { description: `${INTERACTIVE_LIMITS.buttons.min}–${INTERACTIVE_LIMITS.buttons.max} buttons` }),
    },
    {
      description: "reply buttons: WhatsApp interactive button, Messenger/Instagram quick replies, Telegram inline keyboard, X quick-reply options",
      examples: [
        {
          kind: "buttons",
          body: { text: "Your table for 2 on Friday at 19:00: shall we keep it?" },
          buttons: [
            { id: "keep", title: "Keep it" },
            { id: "cancel", title: "Cancel" },
          ],
        },
      ],
    },
  ),
);

/** A list picker (DESIGN §16). */
export const InteractiveList = named(
  "InteractiveList",
  t.Object(
    {
      kind: t.Literal("list"),
      ...interactiveCommon,
      list: t.Object({
        button: t.String({ minLength: 1, description: `the button that opens the list; at most ${INTERACTIVE_LIMITS.listButton} characters` }),
        sections: t.Array(
          t.Object({
            title: t.Optional(t.String({ minLength: 1, description: "at most 24 characters" })),
            rows: t.Array(
              t.Object({
                id: t.String({ minLength: 1, description: `returned as replyId; at most ${INTERACTIVE_LIMITS.id} characters (64 bytes on telegram)` }),
                title: t.String({ minLength: 1, description: `at most ${INTERACTIVE_LIMITS.rowTitle} characters` }),
                description: t.Optional(t.String({ description: `at most ${INTERACTIVE_LIMITS.rowDescription} characters` })),
              }),
            ),
          }),
          { description: `${INTERACTIVE_LIMITS.rows.min}–${INTERACTIVE_LIMITS.rows.max} rows in all sections together` },
        ),
      }),
    },
    {
      description:
        "a list picker: WhatsApp interactive list; Messenger/Instagram quick replies (up to 13); Telegram inline keyboard (a row each); X quick-reply options",
      examples: [
        {
          kind: "list",
          body: { text: "Which delivery slot suits you?" },
          list: {
            button: "Pick a slot",
            sections: [
              {
                title: "Tomorrow",
                rows: [
                  { id: "slot-am", title: "08:00-12:00", description: "morning" },
                  { id: "slot-pm", title: "13:00-18:00" },
                ],
              },
            ],
          },
        },
      ],
    },
  ),
);

export const SendMessageBody = t.Object({
  channel: ChannelEnum,
  channelAccountId: t.Optional(t.String({ ...Uuid, description: "sender account (GET /channels); required for email with several accounts" })),
  to: t.Object(
    {
      contactId: t.Optional(t.String({ ...Uuid, description: "the contact's identity on the channel is used" })),
      phone: t.Optional(t.String({ minLength: 1, maxLength: 40, description: "WhatsApp recipient, international format" })),
      email: t.Optional(t.String({ minLength: 3, maxLength: 320, description: "e-mail recipient" })),
      handle: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "platform user id, page-scoped id, chat id or @username" })),
    },
    { description: "recipient; at least one field", minProperties: 1 },
  ),
  type: t.Union([t.Literal("text"), t.Literal("media"), t.Literal("template"), t.Literal("email"), t.Literal("interactive")]),
  text: t.Optional(t.String({ minLength: 1, description: `for type text; at most ${textLimits} characters` })),
  media: t.Optional(
    t.Object(
      {
        mediaId: t.Optional(t.String({ ...Uuid, description: "from POST /media" })),
        url: t.Optional(t.String({ minLength: 1, maxLength: 2048, description: "publicly reachable https URL" })),
        caption: t.Optional(t.String({ maxLength: 1024 })),
      },
      { description: "for type media: exactly one of mediaId or url", ...exactlyOne("mediaId", "url") },
    ),
  ),
  template: t.Optional(
    t.Object(
      {
        templateId: t.Optional(t.String(Uuid)),
        name: t.Optional(t.String({ minLength: 1, maxLength: 512 })),
        language: t.Optional(t.String({ minLength: 1, maxLength: 20 })),
        params: t.Optional(t.Record(t.String(), t.String({ maxLength: 1024 }))),
        headerMediaId: t.Optional(t.String(Uuid)),
        headerMediaUrl: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
      },
      { description: "for type template: exactly one of templateId or name (+ language when the name exists in several)", ...exactlyOne("templateId", "name") },
    ),
  ),
  email: t.Optional(
    t.Object(
      {
        subject: t.Optional(t.String({ maxLength: 998 })),
        html: t.Optional(t.String({ minLength: 1 })),
        text: t.Optional(t.String({ minLength: 1 })),
      },
      { description: "for type email: html, text or both", anyOf: [{ required: ["html"] }, { required: ["text"] }] },
    ),
  ),
  // One object for the validator (a t.Union's refusal names only `/interactive`); the two named kinds document it.
  interactive: t.Optional(
    t.Object(
      {
        kind: t.UnionEnum(["buttons", "list"]),
        ...interactiveCommon,
        buttons: t.Optional(InteractiveButtons.properties.buttons),
        list: t.Optional(InteractiveList.properties.list),
      },
      {
        description: "for type interactive (not on tiktok nor email: 422 CHANNEL_UNSUPPORTED); windows, consent and price as for text",
        oneOf: [InteractiveButtons, InteractiveList],
      },
    ),
  ),
  replyToMessageId: t.Optional(t.String({ ...Uuid, description: "our id of the message this one answers" })),
  createContact: t.Optional(t.Boolean({ default: true, description: "create the contact from phone / e-mail / handle when unknown" })),
  metadata: t.Optional(t.Record(t.String(), t.String(), { description: "at most 20 keys; key ≤ 40, value ≤ 500 characters" })),
  // Checked by messages.request.ts (its own pointer and words): a `format` here would refuse without saying why.
  scheduledAt: t.Optional(
    t.String({
      description: `send later (DESIGN §18): RFC 3339 with an offset (\`2026-06-02T10:00:00+03:00\`), in the future, at most ${SCHEDULE_LIMITS.maxDays} days ahead. The message is accepted as \`scheduled\` and debited now; eligibility (consent, window, block) is decided again when it is due, and a message refused then fails with that reason and is refunded. POST /messages/{id}/cancel cancels it.`,
      examples: ["2026-06-02T10:00:00+03:00"],
    }),
  ),
});
export type SendMessageInput = typeof SendMessageBody.static;

const MessageStatus = t.Union(
  [
    t.Literal("scheduled"),
    t.Literal("queued"),
    t.Literal("sent"),
    t.Literal("delivered"),
    t.Literal("read"),
    t.Literal("failed"),
    t.Literal("canceled"),
    t.Literal("received"),
  ],
  {
    description:
      "queued → sent → delivered → read, or failed; a message sent later starts scheduled and becomes queued when due (or failed, or canceled by POST /messages/{id}/cancel); received for inbound",
  },
);
const Channel = t.UnionEnum(CHANNELS);

/** The seed's Message: exactly these fields (POST /messages, 202). */
export const MessageAccepted = named(
  "MessageAccepted",
  t.Object({
    id: t.String(),
    status: MessageStatus,
    conversationId: t.String(),
    contactId: t.String(),
    channel: Channel,
    priceType: PriceType,
    unitPrice: t.String({ description: "decimal, 6 places" }),
    charged: t.Boolean(),
    metadata: t.Record(t.String(), t.String()),
  }),
);

export const MessageRecord = named(
  "Message",
  t.Object({
    id: t.String(),
    status: MessageStatus,
    direction: t.Union([t.Literal("outbound"), t.Literal("inbound")]),
    conversationId: t.String(),
    contactId: t.String(),
    channel: Channel,
    channelAccountId: t.String(),
    type: t.String(),
    content: t.Record(t.String(), t.Unknown()),
    address: t.String({ description: "the recipient's (outbound) or sender's (inbound) identity value" }),
    priceType: PriceType,
    unitPrice: t.String(),
    charged: t.Boolean(),
    refunded: t.Boolean(),
    metadata: t.Record(t.String(), t.String()),
    templateId: t.Union([t.String(), t.Null()]),
    replyToMessageId: t.Union([t.String(), t.Null()]),
    providerMessageId: t.Union([t.String(), t.Null()]),
    campaignId: t.Union([t.String(), t.Null()], { description: "the campaign that sent it (null for one-to-one and inbound messages)" }),
    error: t.Union([
      t.Object({
        code: t.String({ description: "the provider's own code" }),
        reason: t.UnionEnum(FAILURE_REASONS, { description: "the normalized reason" }),
        message: t.String(),
      }),
      t.Null(),
    ]),
    scheduledAt: t.Union([t.String(), t.Null()], { description: "when a message sent later is (or was) due; null for messages sent at once" }),
    statusTimes: t.Object({
      queuedAt: t.Union([t.String(), t.Null()]),
      sentAt: t.Union([t.String(), t.Null()]),
      deliveredAt: t.Union([t.String(), t.Null()]),
      readAt: t.Union([t.String(), t.Null()]),
      failedAt: t.Union([t.String(), t.Null()]),
      receivedAt: t.Union([t.String(), t.Null()]),
    }),
    createdAt: t.String(),
    updatedAt: t.String(),
  }),
);
