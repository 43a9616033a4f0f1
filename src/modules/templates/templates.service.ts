/**
 * Templates: resolving one for a send (by id, or by name + language), validating the caller's positional
 * params against it, rendering it for channels without provider-side templates, our own templates, and the
 * WhatsApp review cycle (DESIGN §17): submit → pending → the provider's verdict (webhook, sync, or the
 * sandbox's review job) → `template.status_changed`; deletion at the provider, then here.
 * Placeholders are WhatsApp-style `{{1}}`; the caller's params are `body.<n>` (text of body, and of an
 * e-mail subject/html) and `button.<n>.<m>` (parameter m of button n).
 *
 * Beside it: rendering (templates.render.ts), the read cache (templates.cache.ts) and the review cycle
 * (templates.review.ts).
 */
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { Channel, ProviderTemplate, TemplateComponent } from "../../channels/channel.types";
import type { Db } from "../../db/client";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import type { EventBus } from "../../events";
import { newId } from "../../platform/ids";
import type { TemplateServiceNeeds } from "./templates.needs";
import { accountsOf } from "../channels-api/channel-accounts";
import { forgetTemplates, templateCache } from "./templates.cache";
import { templateView, type CreateTemplateInput } from "./templates.model";
import { paramsOf } from "./templates.render";
import { templatesStore, type TemplateRow } from "./templates.repository";
import { emitChange, reviewChanged, SANDBOX_REVIEW_JOB, SANDBOX_REVIEW_MS } from "./templates.review";

export type { TemplateRow };

const PARAM_KEY = /^(body\.[1-9]\d*|button\.\d+\.[1-9]\d*)$/;
/**
 * Finds the template a send names and checks its params; every problem is a 422 pointing into /template.
 * Runs inside the send's unit of work (read through the template cache).
 */
export async function resolveTemplateForSend({
  db,
  companyId,
  channelAccountId,
  ref,
}: {
  db: Db;
  companyId: string;
  channelAccountId: string;
  ref: { templateId?: string; name?: string; language?: string; params?: Record<string, string> };
}): Promise<TemplateRow> {
  let row: TemplateRow | undefined;
  if (ref.templateId) {
    row = await getTemplateById({ db, id: ref.templateId });
    if (!row || row.companyId !== companyId || row.channelAccountId !== channelAccountId)
      throw new AppError("VALIDATION_FAILED", "No such template on this channel account", [
        { pointer: "/template/templateId", message: "unknown template for this channel account" },
      ]);
  } else {
    const rows = (await templateCache(db).lookup(`name\u0000${channelAccountId}\u0000${ref.name ?? ""}`, () =>
      templatesStore(db).byName(channelAccountId, ref.name ?? ""),
    )) as TemplateRow[];
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
    throw new AppError("TEMPLATE_NOT_APPROVED", `Template "${row.name}" (${row.language}) is ${row.status}, not approved`, [
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

/** A template by id, through the cache (a hit answers without a read). */
export async function getTemplateById({ db, id }: { db: Db; id: string }): Promise<TemplateRow | undefined> {
  return (await templateCache(db).lookup(`id\u0000${id}`, () => templatesStore(db).byId(id))) as TemplateRow | undefined;
}

export async function listTemplates({ db, companyId, channel }: { db: Db; companyId: string; channel?: string }): Promise<TemplateRow[]> {
  return templatesStore(db).list({ companyId, channel });
}

export async function createLocalTemplate({
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
  input: Pick<CreateTemplateInput, "name" | "language" | "category" | "subject" | "body" | "html" | "footer">;
}): Promise<TemplateRow> {
  const components = componentsOf(input as CreateTemplateInput);
  const store = templatesStore(db);
  if (await store.exists(account.id, input.name, input.language))
    throw new AppError("CONFLICT", `A template "${input.name}" in ${input.language} already exists on this account`);
  const row = localTemplateRow({ now, companyId, account, name: input.name, language: input.language, category: input.category ?? "utility", components });
  await store.insertTemplate(row);
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
    rejectedReason: null,
    quality: null,
    createdAt: now(),
    updatedAt: now(),
  };
}

/**
 * Every sandbox account ships an approved `hello_world` (en, one param body.1). Idempotent. Start-up
 * (wireMessaging, `switchboard init`) awaits it before anything is served.
 */
export async function ensureHelloWorld({
  db,
  now,
  companyId,
  account,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  account: { id: string; channel: string };
}): Promise<void> {
  const components: TemplateComponent[] = [{ type: "body", text: "Hello {{1}}! This is a message from Switchboard." }];
  await templatesStore(db).insertTemplateIfAbsent(
    localTemplateRow({ now, companyId, account, name: "hello_world", language: "en", category: "utility", components }),
  );
  forgetTemplates(db);
}

/**
 * Stores a provider's template list (WhatsApp sync): upsert by (account, name, language); status changes apply
 * at send. `list` is the provider's complete list, so a synced template it no longer contains (deleted at the
 * provider) becomes `disabled` — never sent again, instead of failing at the provider with 132001.
 * A known template whose status, rejection reason or quality changed emits `template.status_changed` (a
 * template seen for the first time — made in Meta's console — does not: nothing changed for the caller).
 */
export async function storeSyncedTemplates({
  db,
  events,
  now,
  companyId,
  account,
  list,
}: {
  db: Db;
  events: EventBus;
  now: () => Date;
  companyId: string;
  account: { id: string; channel: string };
  list: ProviderTemplate[];
}): Promise<number> {
  const store = templatesStore(db);
  return db.unit(async () => {
    const listed = new Set(list.map((t) => `${t.name}\u0000${t.language}`));
    for (const row of await store.providerTemplates(account.id))
      if (!listed.has(`${row.name}\u0000${row.language}`) && row.status !== "disabled") {
        await store.disable(row.id, now());
        emitChange(events, row, { ...row, status: "disabled", updatedAt: now() });
      }
    for (const t of list) {
      const before = await store.byNameAndLanguage(account.id, t.name, t.language);
      const values = {
        category: t.category.toLowerCase(),
        status: t.status,
        components: t.components,
        params: paramsOf(t.components),
        providerTemplateId: t.providerTemplateId ?? null,
        // What the list does not say is kept: a quality known from a webhook, the reason of a rejection.
        rejectedReason: t.status === "rejected" ? (t.rejectedReason ?? before?.rejectedReason ?? null) : null,
        quality: t.quality ?? before?.quality ?? null,
        updatedAt: now(),
      };
      await store.upsertProviderTemplate(
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
      if (before && reviewChanged(before, values)) emitChange(events, before, { ...before, ...values });
    }
    forgetTemplates(db);
    return list.length;
  });
}
// ---------------------------------------------------------------- create, get, delete

/** Channels whose templates are ours (no provider-side review). */
const LOCAL_TEMPLATE_CHANNELS = ["email", "telegram", "x", "tiktok", "instagram", "messenger"];

/** How a template is reviewed on this account: by the provider (WhatsApp Cloud), by the sandbox's job, or not at all. */
function reviewerOf(runtime: AccountRuntime): "provider" | "sandbox" | "none" {
  if (LOCAL_TEMPLATE_CHANNELS.includes(runtime.account.channel)) return "none";
  if (runtime.account.provider === "sandbox") return runtime.account.channel === "whatsapp" ? "sandbox" : "none";
  return runtime.adapter.submitTemplate ? "provider" : "none";
}

/** Every `{{n}}` param needs an example (Meta refuses a template without them); no example for a param it lacks. */
function checkExamples(params: string[], examples: Record<string, string> | undefined, problems: DetailCollector): void {
  const given = examples ?? {};
  for (const key of params) if (!(key in given)) problems.add(`/examples/${key}`, `required: an example value for ${key}`);
  for (const key of Object.keys(given)) if (!params.includes(key)) problems.add(`/examples/${key}`, `the template takes ${params.join(", ") || "no params"}`);
}

/** Our components for a request body: header (subject or text header), body, footer, buttons. */
function componentsOf(input: CreateTemplateInput): (TemplateComponent & { html?: string })[] {
  const components: (TemplateComponent & { html?: string })[] = [];
  const header = input.subject ?? input.header;
  if (header !== undefined) components.push({ type: "header", format: "text", text: header });
  components.push({ type: "body", text: input.body, ...(input.html ? { html: input.html } : {}) });
  if (input.footer) components.push({ type: "footer", text: input.footer });
  if (input.buttons?.length)
    components.push({
      type: "buttons",
      buttons: input.buttons.map((b) => ({
        type: b.type,
        text: b.text,
        ...(b.url ? { url: b.url } : {}),
        ...(b.phoneNumber ? { phoneNumber: b.phoneNumber } : {}),
      })),
    });
  return components;
}

/**
 * POST /templates. Our own templates (e-mail, Telegram, X …) are stored approved. A WhatsApp template is
 * submitted for review — to Meta (`POST /{waba_id}/message_templates`, before the unit of work: no network
 * I/O inside it) or, on a sandbox account, to the review job — and stored `pending` with the provider's id.
 * `commit` is the route's idempotent unit of work (idem.batch).
 * NB! A crash between Meta's answer and the commit leaves the template at Meta only: the next sync brings it.
 */
export async function createTemplate({
  deps,
  companyId,
  input,
  commit,
}: {
  deps: TemplateServiceNeeds;
  companyId: string;
  input: CreateTemplateInput;
  commit: <T>(write: () => Promise<T>) => Promise<{ data: T }>;
}): Promise<{ data: ReturnType<typeof templateView> }> {
  const accounts = await accountsOf(deps, companyId, input.channel);
  const runtime = input.channelAccountId ? accounts.find((a) => a.account.id === input.channelAccountId) : accounts[0];
  if (!runtime)
    throw new AppError("VALIDATION_FAILED", `No ${input.channel} account`, [
      { pointer: input.channelAccountId ? "/channelAccountId" : "/channel", message: "no such account for this company" },
    ]);
  const reviewer = reviewerOf(runtime);
  if (input.channel === "whatsapp" && reviewer === "none")
    throw new AppError("VALIDATION_FAILED", "This WhatsApp account cannot submit templates", [
      { pointer: "/channelAccountId", message: "its provider manages templates elsewhere" },
    ]);
  const problems = new DetailCollector();
  if (input.channel === "email" && input.subject === undefined) problems.add("/subject", "required for email");
  const components = componentsOf(input);
  if (reviewer !== "none") {
    if (input.subject !== undefined) problems.add("/subject", "e-mail only; WhatsApp templates take header");
    if (input.html !== undefined) problems.add("/html", "e-mail only");
    if (input.header && /\{\{/.test(input.header)) problems.add("/header", "placeholders in a header are not supported");
    input.buttons?.forEach((b, i) => {
      if (b.type === "url" && !b.url) problems.add(`/buttons/${i}/url`, "required for a url button");
      if (b.type === "phone_number" && !b.phoneNumber) problems.add(`/buttons/${i}/phoneNumber`, "required for a phone_number button");
    });
    checkExamples(paramsOf(components), input.examples, problems);
  } else {
    if (input.header !== undefined) problems.add("/header", "WhatsApp templates only (e-mail: subject)");
    if (input.buttons !== undefined) problems.add("/buttons", "WhatsApp templates only");
    if (input.examples !== undefined) problems.add("/examples", "WhatsApp templates only (they are reviewed by Meta)");
  }
  problems.throwIfAny("The template is invalid");
  const { db, now } = deps;
  const store = templatesStore(db);
  const conflict = () => new AppError("CONFLICT", `A template "${input.name}" in ${input.language} already exists on this account`);
  if (reviewer === "none") return commit(async () => templateView(await createLocalTemplate({ db, now, companyId, account: runtime.account, input })));
  if (await store.exists(runtime.account.id, input.name, input.language)) throw conflict();

  const category = input.category ?? "utility";
  let submitted: { providerTemplateId: string; status: ProviderTemplate["status"] };
  if (reviewer === "provider") {
    try {
      submitted = await runtime.adapter.submitTemplate!({ name: input.name, language: input.language, category, components, examples: input.examples ?? {} });
    } catch (e) {
      throw providerError(e, "submit");
    }
  } else submitted = { providerTemplateId: `sandbox_${newId()}`, status: "pending" };

  return commit(async () => {
    if (await store.exists(runtime.account.id, input.name, input.language)) throw conflict();
    const row: TemplateRow = {
      id: newId(),
      companyId,
      channelAccountId: runtime.account.id,
      channel: runtime.account.channel,
      name: input.name,
      language: input.language,
      category,
      status: submitted.status,
      components,
      params: paramsOf(components),
      source: "provider",
      providerTemplateId: submitted.providerTemplateId,
      rejectedReason: null,
      quality: null,
      createdAt: now(),
      updatedAt: now(),
    };
    await store.insertTemplate(row);
    if (reviewer === "sandbox")
      await deps.queue.enqueueJob({ type: SANDBOX_REVIEW_JOB, payload: { templateId: row.id }, runAt: new Date(now().getTime() + SANDBOX_REVIEW_MS) });
    forgetTemplates(db);
    return templateView(row);
  });
}

/** A provider's refusal → 502 PROVIDER_ERROR with its message (a programming error stays a 500). */
function providerError(e: unknown, what: string): unknown {
  const failure = (e as { failure?: { message?: string; providerCode?: string } }).failure;
  if (!failure) return e;
  return new AppError(
    "PROVIDER_ERROR",
    `The provider refused to ${what} the template: ${failure.message ?? "no reason given"}${failure.providerCode ? ` (${failure.providerCode})` : ""}`,
  );
}

/** GET /templates/{id}: a template of the company (404 for another company's). */
export async function getTemplate({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<TemplateRow> {
  const row = await templatesStore(db).byId(id);
  if (!row || row.companyId !== companyId) throw notFound("template");
  return row;
}

/**
 * DELETE /templates/{id}: refused (409 TEMPLATE_IN_USE) while a running or scheduled campaign uses it; deleted
 * at the provider first (a template submitted or synced there), then here. `inUse` is the campaigns service's
 * answer (templates do not read campaigns' tables).
 * NB! A provider refusal keeps our row (502): the template still exists there and would come back at sync.
 */
export async function deleteTemplate({
  deps,
  companyId,
  id,
  inUse,
}: {
  deps: TemplateServiceNeeds;
  companyId: string;
  id: string;
  inUse: (templateId: string) => Promise<string[]>;
}): Promise<void> {
  const row = await getTemplate({ db: deps.db, companyId, id });
  const campaigns = await inUse(row.id);
  if (campaigns.length)
    throw new AppError("TEMPLATE_IN_USE", `Template "${row.name}" is used by ${campaigns.length} running or scheduled campaign(s): ${campaigns.join(", ")}`);
  const runtime = (await accountsOf(deps, companyId)).find((r) => r.account.id === row.channelAccountId);
  if (row.source === "provider" && runtime?.adapter.deleteTemplate && runtime.account.provider !== "sandbox") {
    try {
      await runtime.adapter.deleteTemplate({ name: row.name, providerTemplateId: row.providerTemplateId });
    } catch (e) {
      throw providerError(e, "delete");
    }
  }
  await deps.db.unit(async () => {
    await templatesStore(deps.db).removeTemplate(row.id);
    forgetTemplates(deps.db);
  });
}
