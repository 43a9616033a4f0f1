/**
 * Templates: resolving one for a send (by id, or by name + language), validating the caller's positional
 * params against it, rendering it for channels without provider-side templates, and our own templates.
 * Placeholders are WhatsApp-style `{{1}}`; the caller's params are `body.<n>` (text of body, and of an
 * e-mail subject/html) and `button.<n>.<m>` (parameter m of button n).
 */
import type { Channel, ProviderTemplate, TemplateComponent } from "../../channels/channel.types";
import type { Db } from "../../db/client";
import { AppError, DetailCollector } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { createReadCache } from "../../db/read-cache";
import { templatesStore, type TemplateRow } from "./templates.repository";

export type { TemplateRow };

const PARAM_KEY = /^(body\.[1-9]\d*|button\.\d+\.[1-9]\d*)$/;

/**
 * Template rows by id and by (account, name), read twice per message (the send resolves it, the dispatch
 * builds from it: 9 µs of ~260 on SQLite, two round trips on PostgreSQL). Shared, never mutated. Fresh
 * (db/read-cache.ts): this process's template writes empty it (the writers below call `forgetTemplates`);
 * other processes' writes change the data version, checked on every lookup — another process's change holds
 * for the next send (PostgreSQL: a trigger, migration-pg 0007); a rollback on the connection empties it.
 */
const templateCaches = new WeakMap<Db, ReturnType<typeof createReadCache<string, unknown>>>();
function templateCache(db: Db) {
  let c = templateCaches.get(db);
  if (!c) templateCaches.set(db, (c = createReadCache<string, unknown>(db, { checkEveryMs: 0 })));
  return c;
}
function forgetTemplates(db: Db): void {
  templateCache(db).invalidate();
}

/** Params a set of components takes: `{{n}}` in body/header text → body.n; in a URL button → button.<i>.n. */
export function paramsOf(components: TemplateComponent[]): string[] {
  const out = new Set<string>();
  for (const c of components) {
    if (c.type === "buttons")
      c.buttons?.forEach((b, i) => {
        for (const m of (b.url ?? "").matchAll(/\{\{(\d+)\}\}/g)) out.add(`button.${i}.${m[1]}`);
      });
    else for (const m of (c.text ?? "").matchAll(/\{\{(\d+)\}\}/g)) out.add(`body.${m[1]}`);
  }
  return [...out].sort();
}

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/**
 * The template with its params filled in: subject, plain text and (e-mail) HTML.
 * NB! Params are data, not markup — a campaign fills them from contact fields anyone can set (a sign-up form,
 * an inbound profile name): in the HTML part each is HTML-escaped (DESIGN §23); text and subject take it as is.
 * `{{unsubscribe_url}}` is the recipient's unsubscribe link (DESIGN §20; e-mail from a template or campaign),
 * escaped like a param; empty where there is none (other channels).
 */
export function renderTemplate(t: { components: TemplateComponent[] }, params: Record<string, string>, extras: { unsubscribeUrl?: string } = {}) {
  const fill = (s: string | undefined, escapeValue = (v: string) => v) =>
    (s ?? "").replace(/\{\{(?:(\d+)|unsubscribe_url)\}\}/g, (_, n: string | undefined) =>
      escapeValue(n === undefined ? (extras.unsubscribeUrl ?? "") : (params[`body.${n}`] ?? "")),
    );
  const header = t.components.find((c) => c.type === "header" && (c.format ?? "text") === "text");
  const body = t.components.find((c) => c.type === "body");
  const footer = t.components.find((c) => c.type === "footer");
  const html = (t.components as (TemplateComponent & { html?: string })[]).find((c) => c.type === "body")?.html;
  const text = [fill(body?.text), footer?.text].filter(Boolean).join("\n\n");
  return { subject: header ? fill(header.text) : undefined, text, html: html ? fill(html, escapeHtml) : undefined };
}

export function hasMediaHeader(t: { components: TemplateComponent[] }): boolean {
  return t.components.some((c) => c.type === "header" && c.format !== undefined && c.format !== "text");
}

/**
 * Finds the template a send names and checks its params; every problem is a 422 pointing into /template.
 * NB! Runs inside the send transaction; synchronous.
 */
export function resolveTemplateForSend({
  db,
  companyId,
  channelAccountId,
  ref,
}: {
  db: Db;
  companyId: string;
  channelAccountId: string;
  ref: { templateId?: string; name?: string; language?: string; params?: Record<string, string> };
}): TemplateRow {
  let row: TemplateRow | undefined;
  if (ref.templateId) {
    row = getTemplateById({ db, id: ref.templateId });
    if (!row || row.companyId !== companyId || row.channelAccountId !== channelAccountId)
      throw new AppError("VALIDATION_FAILED", "No such template on this channel account", [
        { pointer: "/template/templateId", message: "unknown template for this channel account" },
      ]);
  } else {
    const rows = templateCache(db).get(`name\u0000${channelAccountId}\u0000${ref.name ?? ""}`, () =>
      templatesStore(db).byName(channelAccountId, ref.name ?? ""),
    ) as TemplateRow[];
    const matching = ref.language ? rows.filter((r) => r.language === ref.language) : rows;
    if (!matching.length)
      throw new AppError("VALIDATION_FAILED", `No template named "${ref.name}"${ref.language ? ` in ${ref.language}` : ""}`, [
        { pointer: ref.language && rows.length ? "/template/language" : "/template/name", message: "no such template on this channel account" },
      ]);
    if (matching.length > 1)
      throw new AppError("VALIDATION_FAILED", `Template "${ref.name}" exists in several languages; give template.language`, [
        { pointer: "/template/language", message: `required: one of ${matching.map((r) => r.language).join(", ")}` },
      ]);
    row = matching[0]!;
  }
  if (row.status !== "approved")
    throw new AppError("VALIDATION_FAILED", `Template "${row.name}" (${row.language}) is ${row.status}, not approved`, [
      { pointer: "/template", message: `template is ${row.status}` },
    ]);
  const given = ref.params ?? {};
  const problems = new DetailCollector();
  for (const key of Object.keys(given)) {
    if (!PARAM_KEY.test(key)) problems.add(`/template/params/${key}`, "keys are body.<n> or button.<n>.<m>");
    else if (!row.params.includes(key)) problems.add(`/template/params/${key}`, `the template takes ${row.params.join(", ") || "no params"}`);
  }
  for (const key of row.params) if (!(key in given)) problems.add(`/template/params/${key}`, "required by the template");
  problems.throwIfAny("The template params do not match the template");
  return row;
}

export function getTemplateById({ db, id }: { db: Db; id: string }): TemplateRow | undefined {
  return templateCache(db).get(`id\u0000${id}`, () => templatesStore(db).byId(id)) as TemplateRow | undefined;
}

export function listTemplates({ db, companyId, channel }: { db: Db; companyId: string; channel?: string }): TemplateRow[] {
  return templatesStore(db).list({ companyId, channel });
}

export function createLocalTemplate({
  db,
  now,
  companyId,
  account,
  input,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  account: { id: string; channel: Channel };
  input: { name: string; language: string; category?: string; subject?: string; body: string; html?: string; footer?: string };
}): TemplateRow {
  const components: (TemplateComponent & { html?: string })[] = [];
  if (input.subject !== undefined) components.push({ type: "header", format: "text", text: input.subject });
  components.push({ type: "body", text: input.body, ...(input.html ? { html: input.html } : {}) });
  if (input.footer) components.push({ type: "footer", text: input.footer });
  const store = templatesStore(db);
  if (store.exists(account.id, input.name, input.language))
    throw new AppError("CONFLICT", `A template "${input.name}" in ${input.language} already exists on this account`);
  const row = localTemplateRow({ now, companyId, account, name: input.name, language: input.language, category: input.category ?? "utility", components });
  store.insertTemplate(row);
  forgetTemplates(db);
  return row;
}

/** One of our own templates, approved at once. */
function localTemplateRow({
  now,
  companyId,
  account,
  name,
  language,
  category,
  components,
}: {
  now: () => Date;
  companyId: string;
  account: { id: string; channel: string };
  name: string;
  language: string;
  category: string;
  components: TemplateComponent[];
}): TemplateRow {
  return {
    id: newId(),
    companyId,
    channelAccountId: account.id,
    channel: account.channel,
    name,
    language,
    category,
    status: "approved",
    components,
    params: paramsOf(components),
    source: "local",
    providerTemplateId: null,
    createdAt: now(),
    updatedAt: now(),
  };
}

/** Every sandbox account ships an approved `hello_world` (en, one param body.1). Idempotent. */
export function ensureHelloWorld({
  db,
  now,
  companyId,
  account,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  account: { id: string; channel: string };
}): void {
  const components: TemplateComponent[] = [{ type: "body", text: "Hello {{1}}! This is a message from Switchboard." }];
  templatesStore(db).insertTemplateIfAbsent(
    localTemplateRow({ now, companyId, account, name: "hello_world", language: "en", category: "utility", components }),
  );
  forgetTemplates(db);
}

/**
 * Stores a provider's template list (WhatsApp sync): upsert by (account, name, language); status changes apply
 * at send. `list` is the provider's complete list, so a synced template it no longer contains (deleted at the
 * provider) becomes `disabled` — never sent again, instead of failing at the provider with 132001.
 */
export function storeSyncedTemplates({
  db,
  now,
  companyId,
  account,
  list,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  account: { id: string; channel: string };
  list: ProviderTemplate[];
}): number {
  const store = templatesStore(db);
  return db.tx(() => {
    const listed = new Set(list.map((t) => `${t.name}\u0000${t.language}`));
    for (const row of store.providerTemplates(account.id))
      if (!listed.has(`${row.name}\u0000${row.language}`) && row.status !== "disabled") store.disable(row.id, now());
    for (const t of list) {
      const values = {
        category: t.category.toLowerCase(),
        status: t.status,
        components: t.components,
        params: paramsOf(t.components),
        providerTemplateId: t.providerTemplateId ?? null,
        updatedAt: now(),
      };
      store.upsertProviderTemplate(
        {
          id: newId(),
          companyId,
          channelAccountId: account.id,
          channel: account.channel,
          name: t.name,
          language: t.language,
          source: "provider",
          createdAt: now(),
          ...values,
        },
        values,
      );
    }
    forgetTemplates(db);
    return list.length;
  });
}
