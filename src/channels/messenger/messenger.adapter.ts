/**
 * Facebook Messenger adapter (transport only): Send API `POST /{page_id}/messages` with the Page token,
 * webhooks of `object:"page"`.
 *
 * Stored files go up with the send itself ("upload and send": multipart `filedata` with
 * `is_reusable:true`); the returned attachment_id is handed to the engine as providerMediaId, so later
 * sends of the same file send only `payload.attachment_id`. We upload rather than send our own URL because
 * an on-prem appliance's media is usually not reachable from Meta.
 */
import type { AdapterContext, ChannelAdapter, ChannelCapabilities, ProviderDefinition } from "../channel.types";
import { sendViaSendApi, type SendApiTarget } from "../meta/meta.send-api";
import { readSettings } from "../meta/meta.settings";
import { handleMetaWebhook } from "../meta/meta.webhook";
import { parseMessengerWebhook } from "./messenger.inbound";
import { messengerSettings, type MessengerSettings } from "./messenger.settings";

const MB = 1024 * 1024;
const FILE_LIMIT = 25 * MB;

/**
 * Meta, Messenger Platform "Saving assets" / Attachment Upload API: assets up to 25 MB; images 8 MB
 * (the URL-upload limit, applied to every image to stay on the safe side).
 */
export const MESSENGER_MEDIA_LIMITS: Record<string, number> = {
  "image/jpeg": 8 * MB,
  "image/png": 8 * MB,
  "image/gif": 8 * MB,
  "video/mp4": FILE_LIMIT,
  "video/quicktime": FILE_LIMIT,
  "audio/mpeg": FILE_LIMIT,
  "audio/mp4": FILE_LIMIT,
  "audio/aac": FILE_LIMIT,
  "audio/wav": FILE_LIMIT,
  "application/pdf": FILE_LIMIT,
  "text/plain": FILE_LIMIT,
  "application/msword": FILE_LIMIT,
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": FILE_LIMIT,
  "application/vnd.ms-excel": FILE_LIMIT,
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": FILE_LIMIT,
  "application/vnd.ms-powerpoint": FILE_LIMIT,
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": FILE_LIMIT,
};

export function createMessengerAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings: MessengerSettings = readSettings({ schema: messengerSettings, settings: ctx.account.settings, provider: "messenger" });
  const target: SendApiTarget = {
    ctx,
    baseUrl: settings.base_url,
    token: settings.page_access_token,
    senderId: settings.page_id,
    fileUpload: true,
    mediaLimits: MESSENGER_MEDIA_LIMITS,
  };

  const capabilities: ChannelCapabilities = {
    webhookAuth: "provider-signature",
    deliveryReceipts: true,
    readReceipts: true,
    media: MESSENGER_MEDIA_LIMITS,
  };

  return {
    capabilities,
    send: (message) => sendViaSendApi({ target, message }),
    handleWebhook: (request) =>
      handleMetaWebhook({
        request,
        appSecret: settings.app_secret,
        verifyToken: settings.verify_token,
        log: ctx.log,
        parse: (payload) => parseMessengerWebhook({ payload, pageId: settings.page_id, ctx }),
      }),
  };
}

export const messengerProvider: ProviderDefinition<typeof messengerSettings> = {
  name: "messenger",
  channels: ["messenger"],
  settings: messengerSettings,
  create: createMessengerAdapter,
};
