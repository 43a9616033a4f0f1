/**
 * The request rules of POST /messages that need no lookup: every problem of the body at once (422
 * VALIDATION_FAILED) — types per channel, content fields, media URLs, interactive limits, recipient fields,
 * metadata limits and the `scheduledAt` window. Limits come from the channel rules table and messages.model.ts.
 */
import { CHANNEL_RULES, METADATA_LIMITS } from "../../channels/channel.rules";
import type { Channel } from "../../channels/channel.types";
import type { OutboundPolicy } from "../../platform/outbound/outbound.policy";
import { AppError, DetailCollector } from "../../platform/errors";
import { INTERACTIVE_LIMITS, SCHEDULE_LIMITS, type SendMessageInput } from "./messages.model";

/** Every problem of the request body at once (422 VALIDATION_FAILED), before anything is looked up. */
export function checkRequest(input: SendMessageInput, outbound: OutboundPolicy, now: Date): void {
  const rule = CHANNEL_RULES[input.channel];
  const p = new DetailCollector();
  if (input.scheduledAt !== undefined) {
    const problem = scheduleProblem(input.scheduledAt, now);
    if (problem) p.add("/scheduledAt", problem);
  }
  if (!rule.types.includes(input.type))
    p.add("/type", input.type === "email" ? "type email is allowed only with channel email" : `type ${input.type} is not available on ${input.channel}`);

  if (input.type === "interactive" && !rule.types.includes("interactive"))
    throw new AppError("CHANNEL_UNSUPPORTED", `Interactive messages are not available on ${input.channel}`, [
      { pointer: "/channel", message: `${input.channel} has no buttons nor lists; send type text instead` },
    ]);
  const contentFields = ["text", "media", "template", "email", "interactive"] as const;
  for (const f of contentFields) if (f !== input.type && input[f] !== undefined) p.add(`/${f}`, `not allowed with type ${input.type}`);
  if (input.type === "text") {
    if (input.text === undefined) p.add("/text", "required for type text");
    else if (rule.textLimit !== null && [...input.text].length > rule.textLimit) p.add("/text", `at most ${rule.textLimit} characters on ${input.channel}`);
  }
  if (input.type === "media") {
    if (!input.media) p.add("/media", "required for type media");
    else {
      if ((input.media.mediaId === undefined) === (input.media.url === undefined)) p.add("/media", "give exactly one of mediaId or url");
      // No DNS here: the guarded fetcher checks the resolved addresses again when (and if) the URL is fetched.
      const problem = input.media.url !== undefined ? outbound.staticProblem(input.media.url) : null;
      if (problem) p.add("/media/url", `URL not allowed: ${problem}`);
      if (input.media.caption && rule.textLimit !== null && [...input.media.caption].length > rule.textLimit)
        p.add("/media/caption", `at most ${rule.textLimit} characters`);
    }
  }
  if (input.type === "template") {
    if (!input.template) p.add("/template", "required for type template");
    else {
      if ((input.template.templateId === undefined) === (input.template.name === undefined)) p.add("/template", "give exactly one of templateId or name");
      if (input.template.headerMediaId && input.template.headerMediaUrl)
        p.add("/template/headerMediaId", "give at most one of headerMediaId or headerMediaUrl");
      const problem = input.template.headerMediaUrl !== undefined ? outbound.staticProblem(input.template.headerMediaUrl) : null;
      if (problem) p.add("/template/headerMediaUrl", `URL not allowed: ${problem}`);
    }
  }
  if (input.type === "interactive") {
    if (!input.interactive) p.add("/interactive", "required for type interactive");
    else checkInteractive(input.channel, input.interactive, p);
  }
  if (input.type === "email") {
    if (!input.email) p.add("/email", "required for type email");
    else if (input.email.html === undefined && input.email.text === undefined) p.add("/email", "give html or text");
  }

  const to = input.to;
  if (!to.contactId && !to.phone && !to.email && !to.handle) p.add("/to", "give at least one of contactId, phone, email, handle");
  if (!to.contactId) {
    const wanted = rule.address;
    for (const f of ["phone", "email", "handle"] as const)
      if (to[f] !== undefined && f !== wanted) p.add(`/to/${f}`, `${input.channel} recipients are addressed by ${wanted} or contactId`);
  }

  const meta = input.metadata ?? {};
  const keys = Object.keys(meta);
  if (keys.length > METADATA_LIMITS.maxKeys) p.add("/metadata", `at most ${METADATA_LIMITS.maxKeys} keys`);
  for (const k of keys) {
    if (k.length > METADATA_LIMITS.maxKeyLength) p.add(`/metadata/${k}`, `key longer than ${METADATA_LIMITS.maxKeyLength} characters`);
    if ((meta[k] ?? "").length > METADATA_LIMITS.maxValueLength) p.add(`/metadata/${k}`, `value longer than ${METADATA_LIMITS.maxValueLength} characters`);
  }
  p.throwIfAny();
}

/**
 * RFC 3339 date-time with its offset (`Z` or `±hh:mm`): a time without one would be read in the appliance's
 * own zone, which the caller cannot see.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Why `scheduledAt` cannot be used (DESIGN §18), or null. */
function scheduleProblem(text: string, now: Date): string | null {
  const at = RFC3339.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return "not an RFC 3339 date-time with an offset (e.g. 2026-06-02T10:00:00+03:00)";
  if (at <= now.getTime()) return `in the past (now is ${now.toISOString()})`;
  if (at > now.getTime() + SCHEDULE_LIMITS.maxDays * 86_400_000) return `more than ${SCHEDULE_LIMITS.maxDays} days ahead`;
  return null;
}

/** DESIGN §16's limits, each with its pointer; a channel's own id limit (Telegram's callback_data) from the rules table. */
function checkInteractive(channel: Channel, i: NonNullable<SendMessageInput["interactive"]>, p: DetailCollector): void {
  const { textLimit, interactiveIdBytes, sectionTitlesWhenSeveral } = CHANNEL_RULES[channel];
  const L = INTERACTIVE_LIMITS;
  const len = (s: string) => [...s].length;
  const checkId = (id: string, pointer: string) => {
    if (len(id) > L.id) p.add(pointer, `at most ${L.id} characters`);
    else if (interactiveIdBytes !== null && Buffer.byteLength(id) > interactiveIdBytes) p.add(pointer, `at most ${interactiveIdBytes} bytes on ${channel}`);
  };
  if (textLimit !== null && len(i.body.text) > textLimit) p.add("/interactive/body/text", `at most ${textLimit} characters on ${channel}`);
  if (i.header && len(i.header.text) > L.headerFooter) p.add("/interactive/header/text", `at most ${L.headerFooter} characters`);
  if (i.footer && len(i.footer.text) > L.headerFooter) p.add("/interactive/footer/text", `at most ${L.headerFooter} characters`);
  const ids = new Set<string>();
  const unique = (id: string, pointer: string) => {
    if (ids.has(id)) p.add(pointer, "ids must be unique");
    ids.add(id);
  };
  if (i.kind === "buttons") {
    if (!i.buttons) {
      p.add("/interactive/buttons", "required for kind buttons");
      return;
    }
    if (i.list) p.add("/interactive/list", "not allowed with kind buttons");
    const buttons = i.buttons;
    if (buttons.length < L.buttons.min || buttons.length > L.buttons.max) p.add("/interactive/buttons", `${L.buttons.min} to ${L.buttons.max} buttons`);
    buttons.forEach((b, n) => {
      if (len(b.title) > L.buttonTitle) p.add(`/interactive/buttons/${n}/title`, `at most ${L.buttonTitle} characters`);
      checkId(b.id, `/interactive/buttons/${n}/id`);
      unique(b.id, `/interactive/buttons/${n}/id`);
    });
    return;
  }
  if (!i.list) {
    p.add("/interactive/list", "required for kind list");
    return;
  }
  if (i.buttons) p.add("/interactive/buttons", "not allowed with kind list");
  if (len(i.list.button) > L.listButton) p.add("/interactive/list/button", `at most ${L.listButton} characters`);
  const rows = i.list.sections.reduce((n, s) => n + s.rows.length, 0);
  if (rows < L.rows.min || rows > L.rows.max) p.add("/interactive/list/sections", `${L.rows.min} to ${L.rows.max} rows in all sections together`);
  i.list.sections.forEach((s, si) => {
    if (s.title === undefined && sectionTitlesWhenSeveral && i.list!.sections.length > 1)
      p.add(`/interactive/list/sections/${si}/title`, `required on ${channel} when the list has several sections`);
    if (s.title !== undefined && len(s.title) > L.rowTitle) p.add(`/interactive/list/sections/${si}/title`, `at most ${L.rowTitle} characters`);
    s.rows.forEach((r, ri) => {
      const at = `/interactive/list/sections/${si}/rows/${ri}`;
      if (len(r.title) > L.rowTitle) p.add(`${at}/title`, `at most ${L.rowTitle} characters`);
      if (r.description !== undefined && len(r.description) > L.rowDescription) p.add(`${at}/description`, `at most ${L.rowDescription} characters`);
      checkId(r.id, `${at}/id`);
      unique(r.id, `${at}/id`);
    });
  });
}
