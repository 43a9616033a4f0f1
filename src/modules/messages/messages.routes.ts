import { Elysia, t } from "elysia";
import type { MessagesNeeds } from "./messages.needs";
import { AppError } from "../../platform/errors";
import { CHANNELS } from "../../channels/channel.types";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, PageQuery, pageLimit, queryDate, toPage } from "../../platform/http/pagination";
import { named } from "../../platform/http/schemas";
import { InteractiveButtons, InteractiveList, MessageAccepted, MessageRecord, SendMessageBody } from "./messages.model";
import { listMessages, messageBacklog, messageStats } from "./messages.reads";
import { getMessage, sendMessage } from "./messages.service";
import { acceptedView, messageView } from "./messages.views";
import { cancelScheduledMessage } from "./messages.scheduled";

const ChannelQuery = t.Optional(
  t.Union(
    CHANNELS.map((c) => t.Literal(c)),
    { description: "one channel" },
  ),
);
const ListQuery = t.Object({
  ...PageQuery,
  status: t.Optional(t.Union(["scheduled", "queued", "sent", "delivered", "read", "failed", "canceled", "received"].map((s) => t.Literal(s)))),
  channel: ChannelQuery,
  contactId: t.Optional(t.String()),
  campaignId: t.Optional(t.String()),
  conversationId: t.Optional(t.String()),
  from: t.Optional(t.String({ description: "created at or after (RFC 3339)", format: "date-time" })),
  to: t.Optional(t.String({ description: "created before (RFC 3339)", format: "date-time" })),
});
const StatsQuery = t.Object({
  from: t.Optional(t.String({ description: "window start (RFC 3339); default: 24 hours before `to`", format: "date-time" })),
  to: t.Optional(t.String({ description: "window end, exclusive (RFC 3339); default: now", format: "date-time" })),
  interval: t.Optional(t.Union([t.Literal("hour"), t.Literal("day")], { description: "bucket size, UTC; default hour" })),
  channel: ChannelQuery,
});
const count = t.Integer({ minimum: 0 });
const MessageStats = named(
  "MessageStats",
  t.Object({
    interval: t.Union([t.Literal("hour"), t.Literal("day")]),
    from: t.String({ format: "date-time" }),
    to: t.String({ format: "date-time" }),
    buckets: t.Array(
      t.Object({
        start: t.String({ format: "date-time" }),
        queued: count,
        sent: count,
        delivered: count,
        read: count,
        failed: count,
        received: count,
        total: count,
      }),
    ),
  }),
);

const MessageBacklog = named(
  "MessageBacklog",
  t.Object({
    queued: t.Object({
      total: count,
      byChannel: t.Record(t.String(), count, { description: "queued messages per channel (channels with none are absent)" }),
      oldestCreatedAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "when the oldest queued message was accepted" }),
    }),
    failedLast24h: count,
  }),
);

/** A cursor of GET /messages: the last row's [createdAt ms, id], or 422 naming query:cursor. */
function listCursor(cursor: string | undefined): [number, string] | undefined {
  const key = decodeCursor(cursor);
  if (!key) return undefined;
  if (key.length === 2 && typeof key[0] === "number" && typeof key[1] === "string") return [key[0], key[1]];
  throw new AppError("VALIDATION_FAILED", "The cursor is not valid", [{ pointer: "query:cursor", message: "not a cursor returned by this list" }]);
}

/** An accepted message as the examples show it (ids are the examples' own). */
const accepted = (o: { channel: string; priceType: string; unitPrice: string; charged: boolean; metadata: Record<string, string> }) => ({
  id: "01970f2a-7c00-7d1e-8f2a-0b1c2d3e4f50",
  status: "queued",
  conversationId: "01970f2a-7b10-7a2e-9c3d-1a2b3c4d5e6f",
  contactId: "01970f2a-7a00-7b1e-8d2c-2b3c4d5e6f70",
  ...o,
});

export const messagesRoutes = (deps: MessagesNeeds) =>
  new Elysia({ tags: ["Messages"] })
    .use(deps.guard)
    .post(
      "/messages",
      ({ body, auth, idem }) =>
        idem.batch(202, async () => acceptedView(await sendMessage(deps, { companyId: auth.companyId, apiKeyId: auth.keyId, input: body })), {
          shared: true,
        }),
      {
        scope: "messages:send",
        body: SendMessageBody,
        response: { 202: data(MessageAccepted), ...errors(402, 403, 404, 409, 422, 502) },
        detail: {
          summary: "Send a message, now or later",
          description:
            "Queues a message after checking the channel rules (window, consent, limits) and debiting its price. Follow it with GET /messages/{id} or the message.* webhook events. With `scheduledAt` the message is `scheduled` (debited now) and sent at that time: the rules are checked again then, and a message they refuse fails with that reason and is refunded (message.failed); POST /messages/{id}/cancel cancels it before.",
          operationId: "sendMessage",
          "x-error-codes": [
            "MESSAGING_WINDOW_CLOSED",
            "CHANNEL_ACCOUNT_MISSING",
            "CONTACT_BLOCKED",
            "STORAGE_LIMIT_REACHED",
            "INSUFFICIENT_BALANCE",
            "PROVIDER_ERROR",
            "IDEMPOTENCY_CONFLICT",
          ],
          // Request and response examples are paired by name; each is sent to a fresh sandbox appliance by
          // src/platform/http/openapi.examples.test.ts and must answer what is shown here.
          "x-openapi": {
            responses: {
              "202": {
                content: {
                  "application/json": {
                    examples: {
                      template: {
                        summary: "A template is priced",
                        value: {
                          data: accepted({
                            channel: "whatsapp",
                            priceType: "wa_template_text",
                            unitPrice: "0.050000",
                            charged: true,
                            metadata: { orderId: "A-1042" },
                          }),
                        },
                      },
                      text: {
                        summary: "Free-form text inside the window is free",
                        value: { data: accepted({ channel: "whatsapp", priceType: "free", unitPrice: "0.000000", charged: false, metadata: {} }) },
                      },
                      email: {
                        summary: "An e-mail is free",
                        value: { data: accepted({ channel: "email", priceType: "free", unitPrice: "0.000000", charged: false, metadata: {} }) },
                      },
                      buttons: {
                        summary: "Reply buttons are priced as text: free inside the window",
                        value: { data: accepted({ channel: "whatsapp", priceType: "free", unitPrice: "0.000000", charged: false, metadata: {} }) },
                      },
                      list: {
                        summary: "A list picker is priced as text",
                        value: { data: accepted({ channel: "telegram", priceType: "free", unitPrice: "0.000000", charged: false, metadata: {} }) },
                      },
                      scheduled: {
                        summary: "Scheduled: debited now, sent when due",
                        value: {
                          data: {
                            ...accepted({
                              channel: "whatsapp",
                              priceType: "wa_template_text",
                              unitPrice: "0.050000",
                              charged: true,
                              metadata: { appointmentId: "AP-7" },
                            }),
                            status: "scheduled",
                          },
                        },
                      },
                    },
                  },
                },
              },
            },
            requestBody: {
              content: {
                "application/json": {
                  examples: {
                    template: {
                      summary: "The hello_world template on WhatsApp (every sandbox account has it, language en)",
                      value: {
                        channel: "whatsapp",
                        to: { phone: "+14155550101" },
                        type: "template",
                        template: { name: "hello_world", params: { "body.1": "Ann" } },
                        metadata: { orderId: "A-1042" },
                      },
                    },
                    text: {
                      summary: "A text reply inside the 24 h window (after the contact wrote in: on a sandbox, POST /hooks/{channelAccountId})",
                      value: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "Your order has shipped." },
                    },
                    email: {
                      summary: "An e-mail",
                      value: { channel: "email", to: { email: "ann@example.com" }, type: "email", email: { subject: "Welcome", text: "Hello Ann" } },
                    },
                    buttons: {
                      summary:
                        "Reply buttons (InteractiveButtons) inside the 24 h window (after the contact wrote in); a tap arrives as message.received with content.interactive",
                      value: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "interactive", interactive: InteractiveButtons.examples[0] },
                    },
                    list: {
                      summary: "A list picker (InteractiveList) on Telegram (after the contact wrote in: Telegram bots cannot start a conversation)",
                      value: { channel: "telegram", to: { handle: "1001" }, type: "interactive", interactive: InteractiveList.examples[0] },
                    },
                    scheduled: {
                      summary: "A reminder sent tomorrow at 10:00 Istanbul time (sent on 1 June 2026): a template, so no window is needed when it falls due",
                      value: {
                        channel: "whatsapp",
                        to: { phone: "+14155550101" },
                        type: "template",
                        template: { name: "hello_world", params: { "body.1": "Ann" } },
                        scheduledAt: "2026-06-02T10:00:00+03:00",
                        metadata: { appointmentId: "AP-7" },
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    )
    .get(
      "/messages",
      async ({ query, auth }) => {
        const limit = pageLimit(query.limit);
        const { status, channel, contactId, campaignId, conversationId } = query;
        const filter = {
          status,
          channel,
          contactId,
          campaignId,
          conversationId,
          from: queryDate(query.from, "from")?.getTime(),
          to: queryDate(query.to, "to")?.getTime(),
          before: listCursor(query.cursor),
        };
        const rows = await listMessages({ db: deps.db, companyId: auth.companyId, filter, limit: limit + 1 });
        return toPage(rows, limit, (m) => [m.createdAt.getTime(), m.id], messageView);
      },
      {
        scope: "messages:read",
        query: ListQuery,
        response: { 200: list(MessageRecord), ...errors(403, 422) },
        detail: {
          summary: "List messages, newest first (by creation), with filters",
          description: "Every filter is served by an index: a page costs about its own rows whatever the company holds. `from` is inclusive, `to` exclusive.",
          operationId: "listMessages",
        },
      },
    )
    .get(
      "/messages/stats",
      async ({ query, auth }) => ({
        data: await messageStats({
          db: deps.db,
          now: deps.now(),
          companyId: auth.companyId,
          from: queryDate(query.from, "from"),
          to: queryDate(query.to, "to"),
          interval: query.interval,
          channel: query.channel,
        }),
      }),
      {
        scope: "messages:read",
        query: StatsQuery,
        response: { 200: data(MessageStats), ...errors(403, 422) },
        detail: {
          summary: "Messages by current status per hour or day (the console's overview chart)",
          description:
            "Counts the messages created in [from, to) (at most 31 days; default the last 24 hours) by UTC hour or day and their current status; every bucket is listed. Reads each message of the window once through an index on (company, created) — never the rest of the company's messages.",
          operationId: "getMessageStats",
          "x-openapi": {
            responses: {
              "200": {
                content: {
                  "application/json": {
                    example: {
                      data: {
                        interval: "day",
                        from: "2026-06-01T00:00:00.000Z",
                        to: "2026-06-03T00:00:00.000Z",
                        buckets: [
                          { start: "2026-06-01T00:00:00.000Z", queued: 0, sent: 12, delivered: 340, read: 1210, failed: 9, received: 402, total: 1973 },
                          { start: "2026-06-02T00:00:00.000Z", queued: 25, sent: 40, delivered: 310, read: 980, failed: 4, received: 377, total: 1736 },
                        ],
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    )
    .get("/messages/backlog", async ({ auth }) => ({ data: await messageBacklog({ db: deps.db, now: deps.now(), companyId: auth.companyId }) }), {
      scope: "messages:read",
      response: { 200: data(MessageBacklog), ...errors(403) },
      detail: {
        summary: "The company's backlog: queued messages by channel, the oldest one's age, failures of the last 24 hours",
        description:
          "The job queue is the appliance's and its jobs name no company, so this is the company's share of it: every queued message is (or has) a dispatch job; a dispatch that runs out of attempts fails its message. Webhook deliveries that failed are listed by GET /webhooks/{id}/deliveries?status=failed. Costs a read of the queued messages and a count of the last day's failed ones on an index.",
        operationId: "getMessageBacklog",
        "x-openapi": {
          responses: {
            "200": {
              content: {
                "application/json": {
                  example: {
                    data: { queued: { total: 1250, byChannel: { whatsapp: 1200, email: 50 }, oldestCreatedAt: "2026-06-01T09:58:12.000Z" }, failedLast24h: 7 },
                  },
                },
              },
            },
          },
        },
      },
    })
    .post(
      "/messages/:id/cancel",
      ({ params, auth, idem }) =>
        idem.batch(200, async () => messageView((await cancelScheduledMessage(deps, { companyId: auth.companyId, id: params.id })).message)),
      {
        scope: "messages:send",
        params: t.Object({ id: t.String() }),
        response: { 200: data(MessageRecord), ...errors(403, 404, 409) },
        detail: {
          summary: "Cancel a scheduled message",
          description:
            "A message sent with `scheduledAt` and not yet due becomes `canceled`, its price is refunded (a ledger entry) and message.canceled is emitted. 409 CONFLICT for any other status — also when it fell due and is being sent; then it goes on as a sent message would.",
          operationId: "cancelMessage",
          "x-error-codes": ["NOT_FOUND", "CONFLICT", "IDEMPOTENCY_CONFLICT"],
          "x-openapi": {
            responses: {
              "200": {
                content: {
                  "application/json": {
                    example: {
                      data: {
                        id: "01970f2a-7c00-7d1e-8f2a-0b1c2d3e4f50",
                        status: "canceled",
                        direction: "outbound",
                        conversationId: "01970f2a-7b10-7a2e-9c3d-1a2b3c4d5e6f",
                        contactId: "01970f2a-7a00-7b1e-8d2c-2b3c4d5e6f70",
                        channel: "whatsapp",
                        channelAccountId: "0193a4b2-0000-7000-8000-0000000000a1",
                        type: "template",
                        content: { template: { name: "hello_world", language: "en", params: { "body.1": "Ann" } } },
                        address: "+14155550101",
                        priceType: "wa_template_text",
                        unitPrice: "0.050000",
                        charged: true,
                        refunded: true,
                        metadata: { appointmentId: "AP-7" },
                        templateId: "01970e00-0000-7000-8000-00000000c0de",
                        replyToMessageId: null,
                        providerMessageId: null,
                        campaignId: null,
                        error: null,
                        scheduledAt: "2026-06-02T07:00:00.000Z",
                        statusTimes: { queuedAt: null, sentAt: null, deliveredAt: null, readAt: null, failedAt: null, receivedAt: null },
                        createdAt: "2026-06-01T12:00:00.000Z",
                        updatedAt: "2026-06-01T15:30:00.000Z",
                      },
                    },
                  },
                },
              },
            },
          },
        },
      },
    )
    .get("/messages/:id", async ({ params, auth }) => ({ data: messageView(await getMessage({ db: deps.db, companyId: auth.companyId, id: params.id })) }), {
      scope: "messages:read",
      params: t.Object({ id: t.String() }),
      response: { 200: data(MessageRecord), ...errors(403, 404) },
      detail: { summary: "A message with its current status, status times, price, error and metadata", operationId: "getMessage" },
    });
