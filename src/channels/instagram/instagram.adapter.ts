/**
 * Instagram Direct adapter (Instagram API with Instagram Login; transport only): Send API
 * `POST /{ig_user_id}/messages` on graph.instagram.com with the Instagram User token, webhooks of
 * `object:"instagram"`.
 *
 * NB! Instagram Login documents media by URL only (no file upload), so a stored file that has no public
 * URL fails with MEDIA_INVALID; the engine must send `media.url` (a URL Meta can fetch) for Instagram.
 */
import type { AdapterContext, ChannelAdapter, ChannelCapabilities, ProviderDefinition } from "../channel.types";
import { sendViaSendApi, type SendApiTarget } from "../meta/meta.send-api";
import { readSettings } from "../meta/meta.settings";
import { handleMetaWebhook } from "../meta/meta.webhook";
import { parseInstagramWebhook } from "./instagram.inbound";
import { instagramSettings, type InstagramSettings } from "./instagram.settings";

const MB = 1024 * 1024;

/**
 * Meta, "Instagram API with Instagram Login → Send Messages": audio aac/m4a/wav/mp4 25 MB, images
 * png/jpeg/gif 8 MB, video mp4/ogg/avi/mov/webm 25 MB. No documents.
 */
export const INSTAGRAM_MEDIA_LIMITS: Record<string, number> = {
  "image/jpeg": 8 * MB,
  "image/png": 8 * MB,
  "image/gif": 8 * MB,
  "video/mp4": 25 * MB,
  "video/ogg": 25 * MB,
  "video/x-msvideo": 25 * MB,
  "video/quicktime": 25 * MB,
  "video/webm": 25 * MB,
  "audio/aac": 25 * MB,
  "audio/mp4": 25 * MB,
  "audio/wav": 25 * MB,
};

export function createInstagramAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings: InstagramSettings = readSettings({ schema: instagramSettings, settings: ctx.account.settings, provider: "instagram" });
  const target: SendApiTarget = {
    ctx,
    baseUrl: settings.base_url,
    token: settings.access_token,
    senderId: settings.ig_user_id,
    fileUpload: false,
    mediaLimits: INSTAGRAM_MEDIA_LIMITS,
  };

  const capabilities: ChannelCapabilities = {
    webhookAuth: "provider-signature",
    deliveryReceipts: false,
    readReceipts: true,
    // NB! No stored files: with Instagram Login, Meta takes media by URL only, so a POST /media file can
    // never be sent here — declaring none makes the send 422 at acceptance instead of failing later.
    media: {},
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
        parse: (payload) => parseInstagramWebhook({ payload, ctx }),
      }),
  };
}

export const instagramProvider: ProviderDefinition<typeof instagramSettings> = {
  name: "instagram",
  channels: ["instagram"],
  settings: instagramSettings,
  create: createInstagramAdapter,
};
