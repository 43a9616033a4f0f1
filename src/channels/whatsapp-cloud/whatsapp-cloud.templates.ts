/**
 * WhatsApp message templates: building the send-time `components` from our positional params, and mapping
 * Meta's template list (uppercase types/formats/statuses) to our ProviderTemplate shape.
 */
import type { ProviderTemplate, TemplateComponent, TemplateSubmission } from "../channel.types";

// ---------------------------------------------------------------- send

/** A media reference for a header parameter: a public link or an uploaded media id. */
export type WaMediaRef = { link: string } | { id: string };
export type WaHeaderMediaType = "image" | "video" | "document";

type WaParameter =
  | { type: "text"; text: string }
  | { type: "payload"; payload: string }
  | { type: "coupon_code"; coupon_code: string }
  | { type: WaHeaderMediaType; image?: WaMediaRef; video?: WaMediaRef; document?: WaMediaRef };

export type WaTemplateComponent =
  | { type: "header" | "body"; parameters: WaParameter[] }
  | { type: "button"; sub_type: "url" | "quick_reply" | "copy_code"; index: string; parameters: WaParameter[] };

/** `body.10` after `body.2`: params are positional and numbered, so sort numerically, not as text. */
function numbered(params: Record<string, string>, prefix: string): { n: number; value: string }[] {
  const out: { n: number; value: string }[] = [];
  for (const [key, value] of Object.entries(params)) {
    const match = new RegExp(`^${prefix}\\.(\\d+)$`).exec(key);
    if (match) out.push({ n: Number(match[1]), value });
  }
  return out.sort((a, b) => a.n - b.n);
}

const BUTTON_SUB_TYPES: Record<string, "url" | "quick_reply" | "copy_code"> = { url: "url", quick_reply: "quick_reply", copy_code: "copy_code" };

function buttonParameter(subType: "url" | "quick_reply" | "copy_code", value: string): WaParameter {
  if (subType === "quick_reply") return { type: "payload", payload: value };
  if (subType === "copy_code") return { type: "coupon_code", coupon_code: value };
  return { type: "text", text: value }; // url: the dynamic suffix of the button URL
}

/**
 * Our params → Meta components:
 * - `header.<n>` → header text parameters; `headerMedia` (already resolved to a link or id) → header media
 * - `body.<n>` → body text parameters, in numeric order
 * - `button.<n>.<m>` → a button component with `index:"<n>"`; its sub_type comes from the template's
 *   n-th button (url when unknown), parameters in `<m>` order.
 */
export function buildTemplateComponents({
  components,
  params,
  headerMedia,
}: {
  components: TemplateComponent[];
  params: Record<string, string>;
  headerMedia?: { type: WaHeaderMediaType; ref: WaMediaRef };
}): WaTemplateComponent[] {
  const out: WaTemplateComponent[] = [];

  const headerParams: WaParameter[] = numbered(params, "header").map(({ value }) => ({ type: "text", text: value }));
  if (headerMedia) headerParams.unshift({ type: headerMedia.type, [headerMedia.type]: headerMedia.ref } as WaParameter);
  if (headerParams.length) out.push({ type: "header", parameters: headerParams });

  const bodyParams = numbered(params, "body");
  if (bodyParams.length) out.push({ type: "body", parameters: bodyParams.map(({ value }) => ({ type: "text", text: value })) });

  const buttons = components.find((c) => c.type === "buttons")?.buttons ?? [];
  const byIndex = new Map<number, { m: number; value: string }[]>();
  for (const [key, value] of Object.entries(params)) {
    const match = /^button\.(\d+)\.(\d+)$/.exec(key);
    if (!match) continue;
    const n = Number(match[1]);
    byIndex.set(n, [...(byIndex.get(n) ?? []), { m: Number(match[2]), value }]);
  }
  for (const n of [...byIndex.keys()].sort((a, b) => a - b)) {
    const subType = BUTTON_SUB_TYPES[buttons[n]?.type ?? "url"] ?? "url";
    const values = byIndex.get(n)!.sort((a, b) => a.m - b.m);
    out.push({ type: "button", sub_type: subType, index: String(n), parameters: values.map(({ value }) => buttonParameter(subType, value)) });
  }
  return out;
}

// ---------------------------------------------------------------- sync

/** One template as `GET /{waba_id}/message_templates` lists it. */
export interface MetaTemplate {
  id?: string;
  name: string;
  language: string;
  status: string;
  category?: string;
  components?: MetaTemplateComponent[];
  /** Listed with `fields=…,rejected_reason,quality_score`: NONE unless rejected. */
  rejected_reason?: string;
  quality_score?: { score?: string };
}

interface MetaTemplateComponent {
  type: string;
  format?: string;
  text?: string;
  buttons?: { type: string; text?: string; url?: string; phone_number?: string; otp_type?: string; example?: string[] }[];
  example?: { body_text?: string[][]; header_text?: string[] };
}

const STATUS_MAP: Record<string, ProviderTemplate["status"]> = {
  APPROVED: "approved",
  PENDING: "pending",
  IN_APPEAL: "pending",
  REJECTED: "rejected",
  PAUSED: "paused",
  DISABLED: "disabled",
  // Gone or unusable: shown as disabled so it is never sent.
  PENDING_DELETION: "disabled",
  DELETED: "disabled",
  ARCHIVED: "disabled",
  LIMIT_EXCEEDED: "disabled",
};

const COMPONENT_TYPE_MAP: Record<string, TemplateComponent["type"]> = { HEADER: "header", BODY: "body", FOOTER: "footer", BUTTONS: "buttons" };
const FORMAT_MAP: Record<string, NonNullable<TemplateComponent["format"]>> = { TEXT: "text", IMAGE: "image", VIDEO: "video", DOCUMENT: "document" };

/**
 * Meta's button types → ours. NB! Buttons are never dropped (that would shift the `button.<n>` indices);
 * types we have no name for become the nearest one: OTP copy-code → copy_code, anything else (FLOW,
 * CATALOG, OTP one-tap, ...) → quick_reply.
 */
function mapButton(button: {
  type: string;
  text?: string;
  url?: string;
  phone_number?: string;
  otp_type?: string;
}): NonNullable<TemplateComponent["buttons"]>[number] {
  const type = button.type.toUpperCase();
  const mapped: NonNullable<TemplateComponent["buttons"]>[number]["type"] =
    type === "URL"
      ? "url"
      : type === "PHONE_NUMBER"
        ? "phone_number"
        : type === "COPY_CODE" || (type === "OTP" && button.otp_type === "COPY_CODE")
          ? "copy_code"
          : "quick_reply";
  return {
    type: mapped,
    text: button.text ?? (mapped === "copy_code" ? "Copy code" : ""),
    ...(button.url ? { url: button.url } : {}),
    ...(button.phone_number ? { phoneNumber: button.phone_number } : {}),
  };
}

export function mapMetaTemplate(template: MetaTemplate): ProviderTemplate | undefined {
  const status = STATUS_MAP[template.status?.toUpperCase()];
  if (!status) return undefined;
  const components: TemplateComponent[] = [];
  for (const c of template.components ?? []) {
    const type = COMPONENT_TYPE_MAP[c.type?.toUpperCase()];
    if (!type) continue;
    const format = c.format ? FORMAT_MAP[c.format.toUpperCase()] : undefined; // LOCATION headers have no format of ours
    components.push({
      type,
      ...(format ? { format } : {}),
      ...(c.text !== undefined ? { text: c.text } : {}),
      ...(type === "buttons" ? { buttons: (c.buttons ?? []).map(mapButton) } : {}),
    });
  }
  return {
    ...(template.id ? { providerTemplateId: template.id } : {}),
    name: template.name,
    language: template.language,
    category: (template.category ?? "").toLowerCase(),
    status,
    components,
    // Only when Meta said them (listed with fields=…,rejected_reason,quality_score).
    ...(status === "rejected" && template.rejected_reason && template.rejected_reason !== "NONE" ? { rejectedReason: template.rejected_reason } : {}),
    ...(template.quality_score?.score ? { quality: template.quality_score.score } : {}),
  };
}

/** Meta's status words (template list, `message_template_status_update` events) → ours; undefined: not a status we keep. */
export function mapMetaTemplateStatus(status: string | undefined): ProviderTemplate["status"] | undefined {
  return STATUS_MAP[(status ?? "").toUpperCase()];
}

// ---------------------------------------------------------------- submit

/**
 * Our components + examples → the `components` of `POST /{waba_id}/message_templates` (Meta's "Create
 * templates" reference): HEADER (format TEXT), BODY with `example.body_text` (one row: the examples of
 * body.1, body.2 … in order), FOOTER, BUTTONS of QUICK_REPLY / URL (a dynamic URL ends in `{{1}}` and carries
 * `example: [the full URL with the example filled in]`) / PHONE_NUMBER. Examples are checked by the caller.
 */
export function metaComponentsFor({ components, examples }: Pick<TemplateSubmission, "components" | "examples">): MetaTemplateComponent[] {
  const out: MetaTemplateComponent[] = [];
  const fill = (s: string, prefix: string) => s.replace(/\{\{(\d+)\}\}/g, (_, n: string) => examples[`${prefix}.${n}`] ?? "");
  const header = components.find((c) => c.type === "header");
  if (header?.text !== undefined) out.push({ type: "HEADER", format: "TEXT", text: header.text });
  const body = components.find((c) => c.type === "body");
  if (body?.text !== undefined) {
    const values = numbered(examples, "body").map(({ value }) => value);
    out.push({ type: "BODY", text: body.text, ...(values.length ? { example: { body_text: [values] } } : {}) });
  }
  const footer = components.find((c) => c.type === "footer");
  if (footer?.text !== undefined) out.push({ type: "FOOTER", text: footer.text });
  const buttons = components.find((c) => c.type === "buttons")?.buttons ?? [];
  if (buttons.length)
    out.push({
      type: "BUTTONS",
      buttons: buttons.map((b, i) => {
        if (b.type === "url")
          return { type: "URL", text: b.text, url: b.url ?? "", ...(/\{\{\d+\}\}/.test(b.url ?? "") ? { example: [fill(b.url ?? "", `button.${i}`)] } : {}) };
        if (b.type === "phone_number") return { type: "PHONE_NUMBER", text: b.text, phone_number: b.phoneNumber ?? "" };
        return { type: "QUICK_REPLY", text: b.text };
      }),
    });
  return out;
}
