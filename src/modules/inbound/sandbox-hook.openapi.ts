/**
 * The OpenAPI path of the sandbox's inbound simulation, `POST /hooks/{channelAccountId}` (DESIGN §5). The route
 * (hooks.routes.ts) serves every provider's own format at that path and is hidden from the generated document;
 * only the sandbox's JSON is ours to describe, so it is written here by hand and added beside the API's paths.
 * Real providers' hooks are for the providers, not for integrators, and stay out of the document.
 */
const error = { $ref: "#/components/schemas/Error" };
const errorResponse = (description: string) => ({ description, content: { "application/json": { schema: error } } });

export const SANDBOX_HOOK_PATH = {
  "/hooks/{channelAccountId}": {
    post: {
      tags: ["Sandbox simulation"],
      summary: "Simulate a contact writing in (sandbox accounts only)",
      description:
        "A sandbox channel account has no provider to receive messages from: this simulates one inbound message, " +
        "which goes through the same path as a provider's (contact found or created, conversation opened, window " +
        "opened at `timestamp`, `message.received` emitted). Needs an API key of the account's company with the scope " +
        "`messages:send`. Outside the `/api/public/v1` base. Real providers post their own format to this URL, signed " +
        "with their own secret.",
      operationId: "simulateSandboxInbound",
      security: [{ bearer: ["messages:send"] }, { apiKey: ["messages:send"] }],
      parameters: [{ name: "channelAccountId", in: "path", required: true, description: "a sandbox account of GET /channels", schema: { type: "string" } }],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              title: "SandboxInbound",
              type: "object",
              required: ["from"],
              description: "one of text (the contact writes) or interactive (the contact taps a button or list row)",
              oneOf: [{ required: ["text"] }, { required: ["interactive"] }],
              properties: {
                from: {
                  type: "object",
                  minProperties: 1,
                  description: "the sender: one of phone (WhatsApp), email, handle (the other channels: user id or @username)",
                  properties: {
                    phone: { type: "string" },
                    email: { type: "string" },
                    handle: { type: "string" },
                    name: { type: "string", description: "display name" },
                    username: { type: "string", description: "username of a numeric handle (resolves a pending @username identity)" },
                  },
                  anyOf: [{ required: ["phone"] }, { required: ["email"] }, { required: ["handle"] }],
                },
                text: { type: "string", minLength: 1 },
                interactive: {
                  title: "SandboxTap",
                  type: "object",
                  required: ["replyId"],
                  description: "a tap on one of our interactive messages (DESIGN §16): stored as an inbound message of type interactive",
                  properties: {
                    replyId: { type: "string", minLength: 1, description: "the id of the button or list row tapped" },
                    replyTitle: { type: "string", description: "its title as the contact saw it" },
                    inReplyTo: { type: "string", description: "our id of the interactive message tapped (null in the event when unknown)" },
                  },
                },
                timestamp: { type: "string", format: "date-time", description: "the provider's time of the message (opens the window from then); default now" },
                id: { type: "string", description: "the simulated provider message id (repeat it to try a duplicate delivery)" },
                referral: { type: "object", additionalProperties: true, description: "a provider referral (source tracking), passed on as is" },
              },
            },
            example: { from: { phone: "+14155550101", name: "Ann Lee" }, text: "hi" },
          },
        },
      },
      responses: {
        "202": {
          description: "Accepted and stored",
          content: {
            "application/json": {
              schema: {
                type: "object",
                required: ["data"],
                properties: {
                  data: {
                    type: "object",
                    required: ["accepted", "providerMessageId"],
                    properties: { accepted: { type: "boolean", const: true }, providerMessageId: { type: "string" } },
                  },
                },
              },
              example: { data: { accepted: true, providerMessageId: "sandbox.in.4b0c1f9e-2d7a-4c1b-9a53-0e6f1d2c3b4a" } },
            },
          },
        },
        "401": errorResponse("Missing, unknown, revoked or expired API key"),
        "403": errorResponse("The key lacks messages:send or its address is not allowed"),
        "404": errorResponse("No such channel account (or it belongs to another company)"),
        "422": errorResponse("The simulated message is invalid: `details` names each field"),
        "429": errorResponse("Rate limit exceeded"),
      },
    },
  },
};
