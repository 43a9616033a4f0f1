/**
 * WhatsApp Business Cloud API adapter (transport only). Sends through `POST /{phone_number_id}/messages`,
 * uploads stored files through `POST /{phone_number_id}/media`, syncs templates from
 * `GET /{waba_id}/message_templates`, submits and deletes them there (POST / DELETE, DESIGN §17), and parses
 * the `whatsapp_business_account` webhook (messages, statuses, template reviews and quality).
 */
import type {
  AdapterContext,
  ChannelAdapter,
  ChannelCapabilities,
  OutboundMessage,
  ProviderDefinition,
  InteractiveContent,
  ProviderTemplate,
  SendResult,
  StoredMedia,
  TemplateSubmission,
} from "../channel.types";
import { GraphRequestError, type SendFailure } from "../meta/meta.errors";
import { graphRequest, graphUrl } from "../meta/meta.http";
import { guessMimeFromUrl } from "../meta/meta.send-api";
import { readSettings } from "../meta/meta.settings";
import { handleMetaWebhook } from "../meta/meta.webhook";
import { parseWhatsappWebhook } from "./whatsapp-cloud.inbound";
import { whatsappCloudSettings, type WhatsappCloudSettings } from "./whatsapp-cloud.settings";
import {
  buildTemplateComponents,
  mapMetaTemplate,
  mapMetaTemplateStatus,
  metaComponentsFor,
  type MetaTemplate,
  type WaHeaderMediaType,
  type WaMediaRef,
} from "./whatsapp-cloud.templates";

const MB = 1024 * 1024;
const DOCUMENT_LIMIT = 100 * MB;

/**
 * Meta's "Supported media types" table for the Cloud API (developers.facebook.com/docs/whatsapp/
 * cloud-api/reference/media#supported-media-types): images 5 MB, video and audio 16 MB, documents 100 MB,
 * stickers (webp) 500 KB animated / 100 KB static — we allow the animated limit.
 */
export const WHATSAPP_MEDIA_LIMITS: Record<string, number> = {
  "image/jpeg": 5 * MB,
  "image/png": 5 * MB,
  "image/webp": 500 * 1024,
  "video/mp4": 16 * MB,
  "video/3gpp": 16 * MB,
  "audio/aac": 16 * MB,
  "audio/mp4": 16 * MB,
  "audio/mpeg": 16 * MB,
  "audio/amr": 16 * MB,
  "audio/ogg": 16 * MB, // NB! Meta accepts ogg only with the opus codec
  "text/plain": DOCUMENT_LIMIT,
  "application/pdf": DOCUMENT_LIMIT,
  "application/msword": DOCUMENT_LIMIT,
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DOCUMENT_LIMIT,
  "application/vnd.ms-excel": DOCUMENT_LIMIT,
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": DOCUMENT_LIMIT,
  "application/vnd.ms-powerpoint": DOCUMENT_LIMIT,
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": DOCUMENT_LIMIT,
};

type WaMediaType = "image" | "video" | "audio" | "document" | "sticker";

/** Which WhatsApp message type carries a file of this mime type (webp is WhatsApp's sticker format). */
export function waMediaTypeFor(mimeType: string): WaMediaType {
  const mime = mimeType.toLowerCase();
  if (mime === "image/webp") return "sticker";
  const major = mime.split("/")[0];
  if (major === "image" || major === "video" || major === "audio") return major;
  return "document";
}

/** Captions are accepted on image, video and document only; filename on document only. */
function mediaObject(type: WaMediaType, ref: WaMediaRef, extra: { caption?: string; filename?: string }): Record<string, unknown> {
  return {
    ...ref,
    ...(extra.caption && (type === "image" || type === "video" || type === "document") ? { caption: extra.caption } : {}),
    ...(extra.filename && type === "document" ? { filename: extra.filename } : {}),
  };
}

/** The last path segment, so a document sent by link arrives with a name instead of "Untitled". */
function filenameFromUrl(url: string): string | undefined {
  try {
    return decodeURIComponent(new URL(url).pathname.split("/").pop() ?? "") || undefined;
  } catch {
    return undefined;
  }
}

interface WaSendResponse {
  messages?: { id?: string }[];
}

function permanent(reason: SendFailure["reason"], message: string): SendFailure {
  return { ok: false, retry: false, reason, message };
}

export function createWhatsappCloudAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings: WhatsappCloudSettings = readSettings({ schema: whatsappCloudSettings, settings: ctx.account.settings, provider: "whatsapp-cloud" });

  const capabilities: ChannelCapabilities = {
    webhookAuth: "provider-signature",
    deliveryReceipts: true,
    readReceipts: true,
    media: WHATSAPP_MEDIA_LIMITS,
  };

  const call = <T>(init: { method: "GET" | "POST" | "DELETE"; path: string; json?: unknown; form?: FormData; query?: Record<string, string | undefined> }) =>
    graphRequest<T>({
      ctx,
      token: settings.access_token,
      method: init.method,
      url: graphUrl({ baseUrl: settings.base_url, path: init.path, query: init.query }),
      json: init.json,
      form: init.form,
    });

  /** `POST /{phone_number_id}/media` → media id (valid for 30 days at Meta). */
  async function upload(file: StoredMedia): Promise<{ ok: true; id: string } | SendFailure> {
    const limit = WHATSAPP_MEDIA_LIMITS[file.mimeType.toLowerCase()];
    if (limit === undefined) return permanent("MEDIA_INVALID", `WhatsApp does not accept ${file.mimeType}`);
    if (file.size > limit) return permanent("MEDIA_INVALID", `${file.mimeType} is limited to ${limit} bytes on WhatsApp (file has ${file.size})`);
    // A BunFile is a lazy Blob: the multipart body streams from disk instead of buffering up to 100 MB.
    const blob = Bun.file(file.path, { type: file.mimeType });
    if (!(await blob.exists())) return permanent("MEDIA_INVALID", `stored media ${file.id} is missing on disk`);
    const form = new FormData();
    form.set("messaging_product", "whatsapp");
    form.set("type", file.mimeType);
    form.set("file", blob, file.filename);
    const result = await call<{ id?: string }>({ method: "POST", path: `${settings.phone_number_id}/media`, form });
    if (!result.ok) return result.failure;
    if (!result.body.id) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: "media upload answered without id" };
    return { ok: true, id: result.body.id };
  }

  async function postMessage(message: OutboundMessage, type: string, object: Record<string, unknown>): Promise<SendResult> {
    const body = {
      messaging_product: "whatsapp",
      recipient_type: "individual",
      // WhatsApp ids are the digits of the E.164 number (that is also what webhooks report as wa_id).
      to: message.to.value.replace(/^\+/, ""),
      type,
      [type]: object,
      ...(message.replyTo ? { context: { message_id: message.replyTo.providerMessageId } } : {}),
    };
    const result = await call<WaSendResponse>({ method: "POST", path: `${settings.phone_number_id}/messages`, json: body });
    if (!result.ok) return result.failure;
    const id = result.body.messages?.[0]?.id;
    if (!id) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: "send answered without messages[0].id" };
    return { ok: true, providerMessageId: id };
  }

  /**
   * Sends with a media reference for `file`: the cached provider id when there is one, else a fresh
   * upload. NB! Meta media ids expire (30 days); a cached id that is refused gets one fresh upload, and the
   * new id is returned so the engine replaces its cache.
   */
  async function withStoredFile(file: StoredMedia, send: (ref: WaMediaRef) => Promise<SendResult>): Promise<SendResult> {
    if (file.providerMediaId) {
      const cached = await send({ id: file.providerMediaId });
      if (cached.ok || (cached.reason !== "MEDIA_INVALID" && cached.reason !== "PROVIDER_REJECTED")) return cached;
      ctx.log.info({ providerMediaId: file.providerMediaId, providerCode: cached.providerCode }, "cached WhatsApp media id refused; uploading again");
    }
    const uploaded = await upload(file);
    if (!uploaded.ok) return uploaded;
    const sent = await send({ id: uploaded.id });
    // The upload happened even if the send failed: hand the id back on success only (SendResult has no
    // room for it on failure), so a retry uploads again — wasteful but correct.
    return sent.ok ? { ...sent, providerMediaId: uploaded.id } : sent;
  }

  async function sendMedia(message: OutboundMessage, media: { url?: string; file?: StoredMedia; caption?: string }): Promise<SendResult> {
    if (media.file) {
      const file = media.file;
      const type = waMediaTypeFor(file.mimeType);
      return withStoredFile(file, (ref) => postMessage(message, type, mediaObject(type, ref, { caption: media.caption, filename: file.filename })));
    }
    if (media.url) {
      const type = waMediaTypeFor(guessMimeFromUrl(media.url));
      const filename = type === "document" ? filenameFromUrl(media.url) : undefined;
      return postMessage(message, type, mediaObject(type, { link: media.url }, { caption: media.caption, filename }));
    }
    return permanent("MEDIA_INVALID", "media needs a url or a stored file");
  }

  async function sendTemplate(message: OutboundMessage, template: Extract<OutboundMessage["content"], { type: "template" }>["template"]): Promise<SendResult> {
    const header = template.components.find((c) => c.type === "header");
    const headerFormat = header?.format && header.format !== "text" ? (header.format as WaHeaderMediaType) : undefined;
    const headerTypeFor = (mime: string): WaHeaderMediaType => {
      const t = waMediaTypeFor(mime);
      return t === "image" || t === "video" ? t : "document";
    };
    const payload = (headerMedia?: { type: WaHeaderMediaType; ref: WaMediaRef }) => ({
      name: template.name,
      // deterministic: use exactly this language, never fall back to another translation.
      language: { code: template.language, policy: "deterministic" },
      components: buildTemplateComponents({ components: template.components, params: template.params, headerMedia }),
    });

    const hm = template.headerMedia;
    if (hm?.file) {
      const file = hm.file;
      const type = headerFormat ?? headerTypeFor(file.mimeType);
      return withStoredFile(file, (ref) => postMessage(message, "template", payload({ type, ref })));
    }
    if (hm?.url) {
      const type = headerFormat ?? headerTypeFor(guessMimeFromUrl(hm.url));
      return postMessage(message, "template", payload({ type, ref: { link: hm.url } }));
    }
    return postMessage(message, "template", payload());
  }

  return {
    capabilities,

    async send(message) {
      const content = message.content;
      switch (content.type) {
        case "text":
          // preview_url false: a link in a business message must not fetch a preview we did not ask for.
          return postMessage(message, "text", { body: content.text, preview_url: false });
        case "media":
          return sendMedia(message, content.media);
        case "template":
          return sendTemplate(message, content.template);
        case "email":
          return permanent("PROVIDER_REJECTED", "e-mail content cannot be sent over WhatsApp");
        case "interactive":
          return postMessage(message, "interactive", whatsappInteractive(content.interactive));
      }
    },

    handleWebhook(request) {
      return handleMetaWebhook({
        request,
        appSecret: settings.app_secret,
        verifyToken: settings.verify_token,
        log: ctx.log,
        parse: (payload) => parseWhatsappWebhook({ payload, phoneNumberId: settings.phone_number_id, log: ctx.log }),
      });
    },

    async syncTemplates(): Promise<ProviderTemplate[]> {
      const templates: ProviderTemplate[] = [];
      const seenCursors = new Set<string>();
      let after: string | undefined;
      // Follow the cursor against OUR base_url rather than fetching `paging.next` verbatim: next is an
      // absolute graph.facebook.com URL that would bypass a configured proxy/fake. `next` absent = last page.
      for (;;) {
        const result = await call<{ data?: MetaTemplate[]; paging?: { next?: string; cursors?: { after?: string } } }>({
          method: "GET",
          path: `${needWabaId()}/message_templates`,
          query: { fields: "id,name,language,status,category,components,rejected_reason,quality_score", limit: "100", after },
        });
        if (!result.ok) throw new GraphRequestError(result.failure);
        for (const t of result.body.data ?? []) {
          const mapped = mapMetaTemplate(t);
          if (mapped) templates.push(mapped);
          else ctx.log.warn({ name: t.name, status: t.status }, "whatsapp template with unknown status skipped");
        }
        const next = result.body.paging?.next;
        const cursor = result.body.paging?.cursors?.after;
        if (!next || !cursor || seenCursors.has(cursor)) break;
        seenCursors.add(cursor);
        after = cursor;
      }
      return templates;
    },

    async submitTemplate(template: TemplateSubmission) {
      const wabaId = needWabaId();
      // Meta's create answer: {"id": "<template id>", "status": "PENDING", "category": "MARKETING"}.
      const result = await call<{ id?: string; status?: string }>({
        method: "POST",
        path: `${wabaId}/message_templates`,
        json: {
          name: template.name,
          language: template.language,
          category: template.category.toUpperCase(),
          components: metaComponentsFor(template),
        },
      });
      if (!result.ok) throw new GraphRequestError(result.failure);
      if (!result.body.id)
        throw new GraphRequestError({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: "template create answered without id" });
      return { providerTemplateId: String(result.body.id), status: mapMetaTemplateStatus(result.body.status) ?? "pending" };
    },

    async deleteTemplate({ name, providerTemplateId }) {
      const wabaId = needWabaId();
      // With hsm_id only that template (one language) goes; with the name alone, every language of it.
      const result = await call<{ success?: boolean }>({
        method: "DELETE",
        path: `${wabaId}/message_templates`,
        query: { hsm_id: providerTemplateId ?? undefined, name },
      });
      if (!result.ok) throw new GraphRequestError(result.failure);
    },
  };

  function needWabaId(): string {
    if (!settings.waba_id) throw new Error("whatsapp-cloud settings: waba_id is needed to manage templates");
    return settings.waba_id;
  }
}

export const whatsappCloudProvider: ProviderDefinition<typeof whatsappCloudSettings> = {
  name: "whatsapp-cloud",
  channels: ["whatsapp"],
  settings: whatsappCloudSettings,
  create: createWhatsappCloudAdapter,
};

/**
 * DESIGN §16 → Cloud API `interactive` (developers.facebook.com/docs/whatsapp/cloud-api/messages/interactive-reply-buttons-messages
 * and …/interactive-list-messages): `button` with up to 3 `reply` buttons, or `list` with `action.button` and sections of rows.
 */
export function whatsappInteractive(i: InteractiveContent): Record<string, unknown> {
  const common = {
    ...(i.header ? { header: { type: "text", text: i.header.text } } : {}),
    body: { text: i.body.text },
    ...(i.footer ? { footer: { text: i.footer.text } } : {}),
  };
  if (i.kind === "buttons")
    return { type: "button", ...common, action: { buttons: (i.buttons ?? []).map((b) => ({ type: "reply", reply: { id: b.id, title: b.title } })) } };
  return {
    type: "list",
    ...common,
    action: {
      button: i.list!.button,
      sections: i.list!.sections.map((s) => ({
        ...(s.title !== undefined ? { title: s.title } : {}),
        rows: s.rows.map((r) => ({ id: r.id, title: r.title, ...(r.description !== undefined ? { description: r.description } : {}) })),
      })),
    },
  };
}
