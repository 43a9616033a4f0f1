/**
 * WhatsApp Cloud API webhook payload → InboundEvents.
 * `{"object":"whatsapp_business_account","entry":[{"id":"<WABA>","changes":[{"field":"messages","value":{
 *   "metadata":{"phone_number_id"},"contacts":[…],"messages":[…],"statuses":[…],"errors":[…]}}]}]}`
 * Timestamps are epoch seconds as strings.
 * Template reviews arrive on the same callback as other fields of the WABA (DESIGN §17):
 * `message_template_status_update` `{event, message_template_id, message_template_name,
 * message_template_language, reason}` and `message_template_quality_update` `{previous_quality_score,
 * new_quality_score, message_template_id, …}`; `entry.time` (epoch seconds) dates them.
 */
import type { AdapterContext, InboundContent, InboundEvent } from "../channel.types";
import { digits, eventsOfEach, text } from "../inbound-entries";
import { failureFromWebhookError } from "../meta/meta.errors";
import { mapMetaTemplateStatus } from "./whatsapp-cloud.templates";

interface WaMedia {
  id?: string;
  mime_type?: string;
  caption?: string;
  filename?: string;
  sha256?: string;
  url?: string;
}

interface WaMessage {
  from?: string;
  id?: string;
  timestamp?: string;
  type?: string;
  context?: { id?: string; from?: string };
  referral?: Record<string, unknown>;
  text?: { body?: string };
  image?: WaMedia;
  video?: WaMedia;
  audio?: WaMedia & { voice?: boolean };
  document?: WaMedia;
  sticker?: WaMedia & { animated?: boolean };
  location?: { latitude?: number; longitude?: number; name?: string; address?: string };
  contacts?: unknown[];
  interactive?: { type?: string; button_reply?: { id?: string; title?: string }; list_reply?: { id?: string; title?: string; description?: string } };
  button?: { payload?: string; text?: string };
}

interface WaStatus {
  id?: string;
  status?: string;
  timestamp?: string;
  recipient_id?: string;
  errors?: { code?: number; title?: string; message?: string; error_data?: { details?: string } }[];
}

interface WaValue {
  metadata?: { phone_number_id?: string; display_phone_number?: string };
  contacts?: { wa_id?: string; profile?: { name?: string } }[];
  messages?: WaMessage[];
  statuses?: WaStatus[];
  errors?: unknown[];
}

/** WhatsApp ids are digits (`16505551234`); our identity form is E.164 with `+`. */
export function waIdToE164(waId: string): string {
  return waId.startsWith("+") ? waId : `+${waId}`;
}

function epochSeconds(value: string | undefined): Date {
  const at = new Date(Number(value) * 1000);
  return Number.isNaN(at.getTime()) ? new Date(0) : at;
}

function messageContent(message: WaMessage): InboundContent {
  switch (message.type) {
    case "text":
      return { type: "text", text: message.text?.body ?? "" };
    case "image":
    case "video":
    case "audio":
    case "document":
    case "sticker": {
      const kind = message.type;
      const media = message[kind] ?? {};
      return {
        type: "media",
        media: {
          kind,
          providerMediaId: media.id,
          mimeType: media.mime_type,
          ...(media.caption !== undefined ? { caption: media.caption } : {}),
          ...(media.filename !== undefined ? { filename: media.filename } : {}),
        },
      };
    }
    case "location": {
      const l = message.location;
      if (typeof l?.latitude !== "number" || typeof l?.longitude !== "number") return { type: "unsupported", raw: message };
      return {
        type: "location",
        location: { latitude: l.latitude, longitude: l.longitude, ...(l.name ? { name: l.name } : {}), ...(l.address ? { address: l.address } : {}) },
      };
    }
    case "contacts":
      return { type: "contacts", contacts: message.contacts ?? [] };
    case "interactive": {
      // Reply-button and list taps (DESIGN §16): the id we gave, the title the contact saw; context.id → inReplyTo.
      const reply = message.interactive?.button_reply ?? message.interactive?.list_reply;
      return typeof reply?.id === "string" && reply.id
        ? { type: "interactive", interactive: { replyId: reply.id, replyTitle: typeof reply.title === "string" ? reply.title : null } }
        : { type: "unsupported", raw: message };
    }
    case "button":
      // Quick-reply button of a template message.
      return { type: "text", text: message.button?.text ?? message.button?.payload ?? "" };
    default:
      // reaction, order, system, unsupported, request_welcome, ...
      return { type: "unsupported", raw: message };
  }
}

const STATUS_VALUES = new Set(["sent", "delivered", "read", "failed"]);

export function parseWhatsappWebhook({ payload, phoneNumberId, log }: { payload: unknown; phoneNumberId: string; log: AdapterContext["log"] }): InboundEvent[] {
  const body = payload as { object?: unknown; entry?: unknown } | null;
  if (body?.object !== "whatsapp_business_account" || !Array.isArray(body.entry)) {
    log.debug({ object: body?.object }, "whatsapp webhook: not a whatsapp_business_account payload, ignored");
    return [];
  }
  // Entry by entry, change by change, message by message: a malformed one is skipped (logged), the rest kept.
  const each = <T>(items: unknown, parse: (item: T) => InboundEvent[]) => eventsOfEach(items, { log, what: "whatsapp webhook" }, parse);
  return each<{ changes?: unknown; time?: unknown }>(body.entry, (entry) =>
    each<{ field?: string; value?: WaValue }>(entry.changes, (change) => {
      if (change.field === "message_template_status_update" || change.field === "message_template_quality_update")
        return templateEvents(change.field, change.value as WaTemplateValue | undefined, entry.time, log);
      if (change.field !== "messages" || !change.value) return [];
      const value = change.value;
      const target = value.metadata?.phone_number_id;
      if (target && target !== phoneNumberId) {
        // NB! A WABA's numbers share the app's one callback URL: another number's events are not ours.
        log.warn({ phoneNumberId: target }, "whatsapp webhook change for another phone number, skipped");
        return [];
      }
      if (value.errors?.length) log.warn({ errors: value.errors }, "whatsapp webhook reported errors");

      const names = new Map<string, string>();
      for (const c of (Array.isArray(value.contacts) ? value.contacts : []) as ({ wa_id?: unknown; profile?: { name?: unknown } } | null)[]) {
        const waId = digits(c?.wa_id);
        const name = text(c?.profile?.name);
        if (waId && name) names.set(waId, name);
      }
      return [...each<WaMessage>(value.messages, (m) => [messageEvent(m, names)]), ...each<WaStatus>(value.statuses, statusEvents)];
    }),
  );
}

function messageEvent(m: WaMessage, names: Map<string, string>): InboundEvent {
  const from = digits(m.from);
  if (!from || !text(m.id)) throw new Error(`message ${JSON.stringify(m.id ?? null).slice(0, 80)}: no id, or "from" is not a WhatsApp id`);
  const displayName = names.get(from);
  return {
    kind: "message",
    providerMessageId: m.id!,
    from: { value: waIdToE164(from), ...(displayName ? { displayName } : {}) },
    timestamp: epochSeconds(m.timestamp),
    content: messageContent(m),
    ...(text(m.context?.id) ? { inReplyTo: m.context!.id } : {}),
    ...(m.referral && typeof m.referral === "object" ? { referral: m.referral } : {}),
  };
}

function statusEvents(s: WaStatus): InboundEvent[] {
  if (!text(s.id) || !s.status || !STATUS_VALUES.has(s.status)) return [];
  const status = s.status as "sent" | "delivered" | "read" | "failed";
  const first = s.errors?.[0];
  return [
    {
      kind: "status",
      providerMessageId: s.id!,
      status,
      timestamp: epochSeconds(s.timestamp),
      ...(status === "failed"
        ? { error: first ? failureFromWebhookError(first) : { reason: "PROVIDER_REJECTED" as const, message: "failed without error details" } }
        : {}),
    },
  ];
}

interface WaTemplateValue {
  event?: string;
  message_template_id?: number | string;
  message_template_name?: string;
  message_template_language?: string;
  reason?: string | null;
  new_quality_score?: string;
}

/**
 * One template change → one `template` event, its `event` mapped as the template list's status is (ARCHIVED →
 * disabled). Events we keep no status for (UNARCHIVED, FLAGGED, LOCKED …) are skipped — the next sync says
 * where the template stands; a rejection's reason is kept unless Meta says NONE.
 */
function templateEvents(field: string, value: WaTemplateValue | undefined, time: unknown, log: AdapterContext["log"]): InboundEvent[] {
  const name = text(value?.message_template_name);
  const language = text(value?.message_template_language);
  if (!value || !name || !language) throw new Error(`${field}: no message_template_name or message_template_language`);
  const id = value.message_template_id;
  const common = {
    kind: "template" as const,
    providerTemplateId: typeof id === "number" || (typeof id === "string" && id) ? String(id) : null,
    name,
    language,
    timestamp: typeof time === "number" ? new Date(time * 1000) : epochSeconds(typeof time === "string" ? time : undefined),
  };
  if (field === "message_template_quality_update") {
    const quality = text(value.new_quality_score);
    return quality ? [{ ...common, quality }] : [];
  }
  const status = mapMetaTemplateStatus(value.event);
  if (!status) {
    log.info({ event: value.event, name }, "whatsapp template event without a status of ours, ignored");
    return [];
  }
  const reason = text(value.reason);
  return [{ ...common, status, rejectedReason: status === "rejected" && reason && reason !== "NONE" ? reason : null }];
}
