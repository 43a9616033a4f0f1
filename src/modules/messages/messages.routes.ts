import { Elysia, t } from "elysia";
import type { Deps } from "../../deps";
import { data, errors } from "../../platform/http/envelope";
import { MessageAccepted, MessageRecord, SendMessageBody } from "./messages.model";
import { acceptedView, getMessage, messageView, sendMessage } from "./messages.service";

/** An accepted message as the examples show it (ids are the examples' own). */
const accepted = (o: { channel: string; priceType: string; unitPrice: string; charged: boolean; metadata: Record<string, string> }) => ({
  id: "01970f2a-7c00-7d1e-8f2a-0b1c2d3e4f50",
  status: "queued",
  conversationId: "01970f2a-7b10-7a2e-9c3d-1a2b3c4d5e6f",
  contactId: "01970f2a-7a00-7b1e-8d2c-2b3c4d5e6f70",
  ...o,
});

export const messagesRoutes = (deps: Deps) =>
  new Elysia({ tags: ["Messages"] })
    .use(deps.guard)
    .post("/messages", ({ body, auth, idem }) => idem.batch(202, () => acceptedView(sendMessage(deps, { companyId: auth.companyId, apiKeyId: auth.keyId, input: body }))), {
      scope: "messages:send",
      body: SendMessageBody,
      response: { 202: data(MessageAccepted), ...errors(402, 403, 404, 409, 422, 502) },
      detail: {
        summary: "Send a message",
        description:
          "Queues a message after checking the channel rules (window, consent, limits) and debiting its price. Follow it with GET /messages/{id} or the message.* webhook events.",
        operationId: "sendMessage",
        "x-error-codes": ["MESSAGING_WINDOW_CLOSED", "CHANNEL_ACCOUNT_MISSING", "CONTACT_BLOCKED", "STORAGE_LIMIT_REACHED", "INSUFFICIENT_BALANCE", "PROVIDER_ERROR", "IDEMPOTENCY_CONFLICT"],
        // Request and response examples are paired by name; each is sent to a fresh sandbox appliance by
        // src/platform/http/openapi.examples.test.ts and must answer what is shown here.
        "x-openapi": {
          responses: {
            "202": {
              content: {
                "application/json": {
                  examples: {
                    template: { summary: "A template is priced", value: { data: accepted({ channel: "whatsapp", priceType: "wa_template_text", unitPrice: "0.050000", charged: true, metadata: { orderId: "A-1042" } }) } },
                    text: { summary: "Free-form text inside the window is free", value: { data: accepted({ channel: "whatsapp", priceType: "free", unitPrice: "0.000000", charged: false, metadata: {} }) } },
                    email: { summary: "An e-mail is free", value: { data: accepted({ channel: "email", priceType: "free", unitPrice: "0.000000", charged: false, metadata: {} }) } },
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
                    value: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } }, metadata: { orderId: "A-1042" } },
                  },
                  text: {
                    summary: "A text reply inside the 24 h window (after the contact wrote in: on a sandbox, POST /hooks/{channelAccountId})",
                    value: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "Your order has shipped." },
                  },
                  email: { summary: "An e-mail", value: { channel: "email", to: { email: "ann@example.com" }, type: "email", email: { subject: "Welcome", text: "Hello Ann" } } },
                },
              },
            },
          },
        },
      },
    })
    .get("/messages/:id", ({ params, auth }) => ({ data: messageView(getMessage({ db: deps.db, companyId: auth.companyId, id: params.id })) }), {
      scope: "messages:read",
      params: t.Object({ id: t.String() }),
      response: { 200: data(MessageRecord), ...errors(403, 404) },
      detail: { summary: "A message with its current status, status times, price, error and metadata", operationId: "getMessage" },
    });
