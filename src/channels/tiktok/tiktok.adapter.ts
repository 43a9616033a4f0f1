/**
 * TikTok Business Messaging adapter (allow-listed partner API). Replies go to the `conversation_id`
 * learnt from the user's inbound message (`to.conversationRef`): TikTok has no way to address a user
 * by id, and only the user can open a conversation (48 h reply window, enforced by the engine).
 */
import type {
  AdapterContext,
  ChannelAdapter,
  ChannelCapabilities,
  OutboundMessage,
  ProviderDefinition,
  SendResult,
  StoredMedia,
  WebhookRequest,
  WebhookResult,
} from "../channel.types";
import { eventsOfEach } from "../inbound-entries";
import { mediaBytes } from "../media-bytes";
import { parseRetryAfter } from "../../platform/http/retry-after";
import { tiktokFailure, tiktokHttpFailure } from "./tiktok.errors";
import { parseTiktokWebhook, tiktokSignatureValid, type TiktokWebhookBody } from "./tiktok.inbound";
import { readTiktokSettings, tiktokSettings } from "./tiktok.settings";

const MB = 1024 * 1024;

/** Only images can be sent [unsure: size limit not public; 10 MB is what partner docs show]. */
export const tiktokCapabilities: ChannelCapabilities = {
  webhookAuth: "provider-signature",
  deliveryReceipts: false,
  readReceipts: true,
  media: { "image/jpeg": 10 * MB, "image/png": 10 * MB },
};

type Failure = Extract<SendResult, { ok: false }>;
type Call<T> = { ok: true; data: T } | Failure;

export function createTiktokAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings = readTiktokSettings(ctx.account.settings);
  const root = `${settings.base_url.replace(/\/+$/, "")}/open_api/v1.3/business/message`;
  if (!settings.client_secret) ctx.log.warn({ accountId: ctx.account.id }, "tiktok: no client_secret, webhooks will be refused (send-only account)");

  async function call<T>(path: string, body: Record<string, unknown> | FormData): Promise<Call<T>> {
    const isForm = body instanceof FormData;
    let response: Response;
    let parsed: { code?: unknown; message?: string; data?: T } | undefined;
    try {
      response = await ctx.fetch(`${root}${path}`, {
        method: "POST",
        // NB! No "Bearer": TikTok wants the bare token in Access-Token (a prefix gives 40105).
        headers: isForm ? { "Access-Token": settings.access_token } : { "Access-Token": settings.access_token, "content-type": "application/json" },
        body: isForm ? body : JSON.stringify(body),
      });
      parsed = (await response.json().catch(() => undefined)) as typeof parsed;
    } catch (err) {
      return tiktokHttpFailure({ message: `TikTok unreachable: ${err instanceof Error ? err.message : String(err)}` });
    }
    if (!response.ok || !parsed || typeof parsed.code !== "number") {
      return tiktokHttpFailure({
        status: response.status,
        message: parsed?.message ?? `HTTP ${response.status}`,
        retryAfterMs: parseRetryAfter({ header: response.headers.get("retry-after"), now: ctx.now() }),
      });
    }
    if (parsed.code !== 0) return tiktokFailure({ code: parsed.code, message: parsed.message ?? "" });
    return { ok: true, data: parsed.data as T };
  }

  async function sendBody(recipient: string, message: Record<string, unknown>): Promise<Call<string>> {
    const answer = await call<{ message?: { message_id?: string } }>("/send/", {
      business_id: settings.business_id,
      recipient_type: "CONVERSATION",
      recipient,
      ...message,
    });
    if (!answer.ok) return answer;
    const id = answer.data?.message?.message_id;
    if (!id) return tiktokHttpFailure({ message: "TikTok answered code 0 without message_id" });
    return { ok: true, data: id };
  }

  async function send(message: OutboundMessage): Promise<SendResult> {
    const recipient = message.to.conversationRef;
    if (!recipient) {
      return {
        ok: false,
        retry: false,
        reason: "RECIPIENT_INVALID",
        message: "no TikTok conversation for this contact yet: the user must write to the business first",
      };
    }
    const content = message.content;
    const text = (body: string) => ({ message_type: "TEXT", text: { body } });
    switch (content.type) {
      case "text":
        return done(await sendBody(recipient, text(content.text)));
      case "template":
        return done(await sendBody(recipient, text(content.template.rendered.text)));
      case "email":
        return { ok: false, retry: false, reason: "PROVIDER_REJECTED", message: "content type email cannot be sent on TikTok" };
      case "interactive":
        // Refused at acceptance (CHANNEL_UNSUPPORTED); kept for a message stored before that rule.
        return { ok: false, retry: false, reason: "PROVIDER_REJECTED", message: "interactive messages cannot be sent on TikTok" };
      case "media": {
        const media = await mediaIdFor(content.media);
        if (!media.ok) return media;
        const sent = await sendBody(recipient, { message_type: "IMAGE", image: { media_id: media.data.mediaId } });
        if (!sent.ok) return sent;
        // TikTok images carry no caption: it follows as a text message.
        if (content.media.caption) {
          const caption = await sendBody(recipient, text(content.media.caption));
          if (!caption.ok) ctx.log.warn({ accountId: ctx.account.id, messageId: message.messageId, caption }, "tiktok: image sent, caption text failed");
        }
        return { ok: true, providerMessageId: sent.data, ...(media.data.uploaded ? { providerMediaId: media.data.mediaId } : {}) };
      }
    }
  }

  function done(answer: Call<string>): SendResult {
    return answer.ok ? { ok: true, providerMessageId: answer.data } : answer;
  }

  /** A cached media id, or an upload of the stored file or of the URL's bytes. */
  async function mediaIdFor(media: { url?: string; file?: StoredMedia }): Promise<Call<{ mediaId: string; uploaded: boolean }>> {
    if (media.file?.providerMediaId) return { ok: true, data: { mediaId: media.file.providerMediaId, uploaded: false } };
    // TikTok takes no links: a URL's picture is fetched and uploaded.
    const bytes = await mediaBytes(ctx, media, tiktokCapabilities.media);
    if (!bytes.ok) return bytes;
    const { blob, filename } = bytes;
    if (!(blob.type in tiktokCapabilities.media)) {
      return { ok: false, retry: false, reason: "MEDIA_INVALID", message: `TikTok messages take JPEG or PNG images only, not ${blob.type || "unknown type"}` };
    }
    // [unsure] field names of the partner-only media upload: business_id, media_type, file.
    const form = new FormData();
    form.append("business_id", settings.business_id);
    form.append("media_type", "IMAGE");
    form.append("file", blob, filename);
    const answer = await call<{ media_id?: string }>("/media/upload/", form);
    if (!answer.ok) return answer.reason === "PROVIDER_REJECTED" ? { ...answer, reason: "MEDIA_INVALID" } : answer;
    if (!answer.data?.media_id) return tiktokHttpFailure({ message: "TikTok upload answered without media_id" });
    return { ok: true, data: { mediaId: answer.data.media_id, uploaded: true } };
  }

  async function handleWebhook(request: WebhookRequest): Promise<WebhookResult> {
    if (request.method !== "POST") return { response: { status: 405 }, events: [] };
    const verdict = tiktokSignatureValid({
      clientSecret: settings.client_secret,
      header: request.headers.get("tiktok-signature"),
      rawBody: request.rawBody,
      now: ctx.now(),
    });
    if (!verdict.ok) return { response: { status: 401, body: verdict.why }, events: [] };
    let body: TiktokWebhookBody;
    try {
      body = JSON.parse(new TextDecoder().decode(request.rawBody)) as TiktokWebhookBody;
    } catch {
      return { response: { status: 400, body: "body is not JSON" }, events: [] };
    }
    // One app may serve several business accounts; only ours count.
    if (body?.user_openid !== undefined && body.user_openid !== settings.business_id) return { response: { status: 200 }, events: [] };
    // A malformed event is logged and acknowledged (DESIGN §23), not redelivered forever.
    return {
      response: { status: 200 },
      events: eventsOfEach<TiktokWebhookBody>(
        [body],
        { log: ctx.log, what: "tiktok webhook" },
        (b) => parseTiktokWebhook({ body: b, businessId: settings.business_id }).events,
      ),
    };
  }

  return { capabilities: tiktokCapabilities, send, handleWebhook };
}

export const tiktokProvider: ProviderDefinition<typeof tiktokSettings> = {
  name: "tiktok",
  channels: ["tiktok"],
  settings: tiktokSettings,
  create: createTiktokAdapter,
};
