/**
 * X (Twitter) API v2 Direct Messages adapter: one-to-one DMs by user id, Account Activity webhooks in.
 *
 * Media (a stored file or a URL's bytes) goes through X's chunked media upload (x.media.ts) and is attached
 * to the DM by its media id, with the caption as the DM's text.
 * X has no delivery receipts; read receipts arrive as `direct_message_mark_read_events`.
 * The daily DM limit (`daily_dm_limit`) is counted by the engine, not here: the adapter only reports
 * X's own 429s.
 */
import type {
  AdapterContext,
  ChannelAdapter,
  ChannelCapabilities,
  InteractiveContent,
  OutboundMessage,
  ProviderDefinition,
  SendResult,
  WebhookRequest,
  WebhookResult,
} from "../channel.types";
import { xCall } from "./x.http";
import { crcResponse, parseXActivity, xSignatureValid, type XActivityPayload } from "./x.inbound";
import { uploadXMedia, X_DM_MEDIA } from "./x.media";
import { readXSettings, xSettings } from "./x.settings";

export const xCapabilities: ChannelCapabilities = {
  webhookAuth: "provider-signature",
  deliveryReceipts: false,
  readReceipts: true,
  media: X_DM_MEDIA,
};

export function createXAdapter(ctx: AdapterContext): ChannelAdapter {
  const { settings, auth } = readXSettings(ctx.account.settings, ctx.account.id);
  if (!settings.consumer_secret) {
    ctx.log.warn(
      { accountId: ctx.account.id },
      "x: no consumer_secret, so Account Activity webhooks cannot be verified; this account can send but not receive",
    );
  }

  async function send(message: OutboundMessage): Promise<SendResult> {
    const recipient = message.to.value;
    if (!/^\d+$/.test(recipient)) {
      // "@username" identities stay pending until the user writes to us and we learn the id.
      return { ok: false, retry: false, reason: "RECIPIENT_INVALID", message: `X DMs need a numeric user id, got "${recipient}"` };
    }
    const content = message.content;
    let body: { text?: string; attachments?: { media_id: string }[]; quick_reply?: XQuickReply };
    switch (content.type) {
      case "text":
        body = { text: content.text };
        break;
      case "template":
        body = { text: content.template.rendered.text };
        break;
      case "media": {
        const uploaded = await uploadXMedia({ ctx, settings, auth, media: content.media });
        if (!uploaded.ok) return uploaded;
        body = { ...(content.media.caption ? { text: content.media.caption } : {}), attachments: [{ media_id: uploaded.mediaId }] };
        break;
      }
      case "email":
        return { ok: false, retry: false, reason: "PROVIDER_REJECTED", message: "content type email cannot be sent on X" };
      case "interactive":
        body = xInteractive(content.interactive);
        break;
    }
    const url = `${settings.base_url.replace(/\/+$/, "")}/2/dm_conversations/with/${recipient}/messages`;
    const answer = await xCall<{ data?: { dm_event_id?: string } }>({ ctx, settings, auth, method: "POST", url, body: JSON.stringify(body) });
    if (!answer.ok) return answer;
    const eventId = answer.data?.data?.dm_event_id;
    if (eventId) return { ok: true, providerMessageId: eventId };
    return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: String(answer.status), message: "X answered without dm_event_id" };
  }

  async function handleWebhook(request: WebhookRequest): Promise<WebhookResult> {
    if (!settings.consumer_secret) return { response: { status: 403, body: "this X account has no consumer_secret and cannot verify webhooks" }, events: [] };
    if (request.method === "GET") {
      const token = request.url.searchParams.get("crc_token");
      if (!token) return { response: { status: 400, body: "crc_token missing" }, events: [] };
      const answer = crcResponse(settings.consumer_secret, token);
      if (!answer) {
        ctx.log.warn({ accountId: ctx.account.id, length: token.length }, "x: crc_token of the wrong shape refused (not signed)");
        return { response: { status: 400, body: "crc_token is not of X's shape" }, events: [] };
      }
      return { response: { status: 200, body: JSON.stringify(answer), headers: { "content-type": "application/json" } }, events: [] };
    }
    if (request.method !== "POST") return { response: { status: 405 }, events: [] };
    if (!xSignatureValid({ consumerSecret: settings.consumer_secret, rawBody: request.rawBody, header: request.headers.get("x-twitter-webhooks-signature") })) {
      return { response: { status: 401, body: "bad signature" }, events: [] };
    }
    let payload: XActivityPayload;
    try {
      payload = JSON.parse(new TextDecoder().decode(request.rawBody)) as XActivityPayload;
    } catch {
      return { response: { status: 400, body: "body is not JSON" }, events: [] };
    }
    return { response: { status: 200 }, events: parseXActivity({ payload, ourUserId: settings.user_id, log: ctx.log }).events };
  }

  return { capabilities: xCapabilities, send, handleWebhook };
}

export const xProvider: ProviderDefinition<typeof xSettings> = {
  name: "x",
  channels: ["x"],
  settings: xSettings,
  create: createXAdapter,
};

interface XQuickReply {
  type: "options";
  options: { label: string; metadata: string; description?: string }[];
}

/**
 * DESIGN §16 → X DM quick-reply options (developer.x.com: Direct Message quick replies, `quick_reply.type =
 * "options"`): header, body and footer as the text; each button or list row an option with label = title,
 * metadata = our id (X returns it as `quick_reply_response.metadata`), description = a row's description.
 */
export function xInteractive(i: InteractiveContent): { text: string; quick_reply: XQuickReply } {
  const text = [i.header?.text, i.body.text, i.footer?.text].filter((t): t is string => Boolean(t)).join("\n\n");
  const choices: { id: string; title: string; description?: string }[] =
    i.kind === "buttons" ? (i.buttons ?? []) : (i.list?.sections.flatMap((s) => s.rows) ?? []);
  return {
    text,
    quick_reply: {
      type: "options",
      options: choices.map((c) => ({ label: c.title, metadata: c.id, ...(c.description !== undefined ? { description: c.description } : {}) })),
    },
  };
}
