/**
 * Outbound for the Messenger Platform Send API, shared by Messenger (`POST /{page_id}/messages`) and
 * Instagram (`POST /{ig_user_id}/messages`): same body shape, same response `{recipient_id, message_id}`.
 */
import type { AdapterContext, InteractiveContent, OutboundMessage, SendResult, StoredMedia } from "../channel.types";
import type { SendFailure } from "./meta.errors";
import { graphRequest, graphUrl } from "./meta.http";

type AttachmentType = "image" | "video" | "audio" | "file";

interface SendApiResponse {
  recipient_id?: string;
  message_id?: string;
  attachment_id?: string;
}

/** Send API attachment type for a mime type; anything not image/video/audio goes as a file. */
export function attachmentTypeFor(mimeType: string): AttachmentType {
  const major = mimeType.split("/")[0]?.toLowerCase();
  if (major === "image" || major === "video" || major === "audio") return major;
  return "file";
}

export interface SendApiTarget {
  ctx: Pick<AdapterContext, "fetch" | "now" | "log">;
  baseUrl: string;
  token: string;
  /** Page id (Messenger) or Instagram professional account id: the path segment before /messages. */
  senderId: string;
  /**
   * Whether a stored file may be uploaded with the send (multipart `filedata`, Messenger's "upload and
   * send"). Instagram with Instagram Login documents media by URL only, so it says false.
   */
  fileUpload: boolean;
  /** mime type → max bytes (the adapter's capabilities), checked before an upload. */
  mediaLimits: Record<string, number>;
}

function messageBody(recipientId: string, message: Record<string, unknown>) {
  // RESPONSE: we answer inside the 24 h window; the engine refuses sends outside it before we get here.
  return { recipient: { id: recipientId }, messaging_type: "RESPONSE", message };
}

function failure(reason: SendFailure["reason"], message: string): SendFailure {
  return { ok: false, retry: false, reason, message };
}

async function post(target: SendApiTarget, init: { json?: unknown; form?: FormData }): Promise<SendResult & { attachmentId?: string }> {
  const result = await graphRequest<SendApiResponse>({
    ctx: target.ctx,
    token: target.token,
    method: "POST",
    url: graphUrl({ baseUrl: target.baseUrl, path: `${target.senderId}/messages` }),
    ...init,
  });
  if (!result.ok) return result.failure;
  const id = result.body.message_id;
  if (!id) return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: "Send API answered without message_id" };
  return { ok: true, providerMessageId: id, attachmentId: result.body.attachment_id };
}

async function sendStoredFile(target: SendApiTarget, recipientId: string, file: StoredMedia): Promise<SendResult> {
  const type = attachmentTypeFor(file.mimeType);
  if (file.providerMediaId) {
    const cached = await post(target, { json: messageBody(recipientId, { attachment: { type, payload: { attachment_id: file.providerMediaId } } }) });
    // NB! Reusable attachment ids expire after 90 days; a refusal of a cached id gets one fresh upload.
    if (cached.ok || (cached.reason !== "MEDIA_INVALID" && cached.reason !== "PROVIDER_REJECTED") || !target.fileUpload) return strip(cached);
    target.ctx.log.info({ providerMediaId: file.providerMediaId, providerCode: cached.providerCode }, "cached attachment id refused; uploading again");
  }
  if (!target.fileUpload) {
    return failure("MEDIA_INVALID", "this provider accepts media by public URL only; send media.url instead of a stored file");
  }
  const limit = target.mediaLimits[file.mimeType.toLowerCase()];
  if (limit === undefined) return failure("MEDIA_INVALID", `${file.mimeType} is not accepted here`);
  if (file.size > limit) return failure("MEDIA_INVALID", `${file.mimeType} is limited to ${limit} bytes (file has ${file.size})`);
  const blob = Bun.file(file.path, { type: file.mimeType });
  if (!(await blob.exists())) return failure("MEDIA_INVALID", `stored media ${file.id} is missing on disk`);

  // "Upload and send" in one call: the Send API saves the asset (is_reusable) and returns its
  // attachment_id, which the engine caches as providerMediaId for the next send of the same file.
  const form = new FormData();
  form.set("recipient", JSON.stringify({ id: recipientId }));
  form.set("messaging_type", "RESPONSE");
  form.set("message", JSON.stringify({ attachment: { type, payload: { is_reusable: true } } }));
  form.set("filedata", blob, file.filename); // a BunFile streams from disk
  const sent = await post(target, { form });
  if (!sent.ok) return sent;
  return { ok: true, providerMessageId: sent.providerMessageId, ...(sent.attachmentId ? { providerMediaId: sent.attachmentId } : {}) };
}

function strip(result: SendResult & { attachmentId?: string }): SendResult {
  if (!result.ok) return result;
  return { ok: true, providerMessageId: result.providerMessageId, ...(result.providerMediaId ? { providerMediaId: result.providerMediaId } : {}) };
}

/** Sends one OutboundMessage through the Send API. Never throws for a provider answer. */
export async function sendViaSendApi({ target, message }: { target: SendApiTarget; message: OutboundMessage }): Promise<SendResult> {
  const recipientId = message.to.value;
  const content = message.content;
  switch (content.type) {
    case "text":
      return strip(await post(target, { json: messageBody(recipientId, { text: content.text }) }));
    case "template":
      // Messenger and Instagram have no provider-side templates: the rendered text is the message.
      return strip(await post(target, { json: messageBody(recipientId, { text: content.template.rendered.text }) }));
    case "media": {
      const { url, file, caption } = content.media;
      let result: SendResult;
      if (file) {
        result = await sendStoredFile(target, recipientId, file);
      } else if (url) {
        const type = attachmentTypeFor(guessMimeFromUrl(url));
        result = strip(await post(target, { json: messageBody(recipientId, { attachment: { type, payload: { url, is_reusable: true } } }) }));
      } else {
        return failure("MEDIA_INVALID", "media needs a url or a stored file");
      }
      if (result.ok && caption) {
        // The Send API has no caption field: the caption follows as its own text message. NB! If that
        // second call fails the attachment is already delivered; we report success (the attachment is the
        // message) and log, rather than have the engine retry and duplicate the attachment.
        const captionResult = await post(target, { json: messageBody(recipientId, { text: caption }) });
        if (!captionResult.ok)
          target.ctx.log.warn(
            { messageId: message.messageId, providerCode: captionResult.providerCode },
            "caption message failed after the attachment was sent",
          );
      }
      return result;
    }
    case "email":
      return failure("PROVIDER_REJECTED", "e-mail content cannot be sent through the Send API");
    case "interactive":
      return strip(await post(target, { json: messageBody(recipientId, quickReplies(content.interactive)) }));
  }
}

/** Quick replies per message (developers.facebook.com/docs/messenger-platform/send-messages/quick-replies). */
export const MAX_QUICK_REPLIES = 13;
/** A quick reply's title is cut at 20 characters by Meta: a list row's (≤ 24) is shortened here, visibly. */
const QUICK_REPLY_TITLE = 20;

/**
 * DESIGN §16 → Send API quick replies (Messenger and Instagram alike): header, body and footer as the text;
 * each button or list row a `text` quick reply with payload = our id (a list: its rows, at most 13).
 */
export function quickReplies(i: InteractiveContent): { text: string; quick_replies: { content_type: "text"; title: string; payload: string }[] } {
  const text = [i.header?.text, i.body.text, i.footer?.text].filter((t): t is string => Boolean(t)).join("\n\n");
  const choices = i.kind === "buttons" ? (i.buttons ?? []) : (i.list?.sections.flatMap((s) => s.rows) ?? []);
  const title = (t: string) => ([...t].length > QUICK_REPLY_TITLE ? `${[...t].slice(0, QUICK_REPLY_TITLE - 1).join("")}…` : t);
  return { text, quick_replies: choices.slice(0, MAX_QUICK_REPLIES).map((c) => ({ content_type: "text", title: title(c.title), payload: c.id })) };
}

/** The Send API needs an attachment type but a URL carries no mime type; the extension is our best hint. */
export function guessMimeFromUrl(url: string): string {
  let path: string;
  try {
    path = new URL(url).pathname.toLowerCase();
  } catch {
    path = url.toLowerCase();
  }
  const ext = path.slice(path.lastIndexOf(".") + 1);
  const byExtension: Record<string, string> = {
    jpg: "image/jpeg",
    jpeg: "image/jpeg",
    png: "image/png",
    gif: "image/gif",
    webp: "image/webp",
    mp4: "video/mp4",
    mov: "video/quicktime",
    webm: "video/webm",
    avi: "video/x-msvideo",
    "3gp": "video/3gpp",
    mp3: "audio/mpeg",
    m4a: "audio/mp4",
    aac: "audio/aac",
    wav: "audio/wav",
    ogg: "audio/ogg",
    amr: "audio/amr",
  };
  return byExtension[ext] ?? "application/octet-stream";
}
