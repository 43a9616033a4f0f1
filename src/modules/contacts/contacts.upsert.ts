/**
 * A contact's fields, identities and tags written from the API and imports: POST /contacts (upsertContact; applyUpsert
 * for input already checked, inside the caller's unit) and PATCH /contacts/{id} (patchContact). Identities of
 * another contact are a 409 CONFLICT thrown before the first write; a write that changes nothing emits nothing.
 */
import type { Db } from "../../db/client";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { HOLD_ROUNDS, holdContact, requireContact, storesOf, type Events, type WriteDeps } from "./contacts.access";
import { checkCustomFields, checkIdentities, checkTags, checkUpsert, text, type CheckedIdentity, type CheckedUpsert } from "./contacts.checks";
import { applyConsent } from "./contacts.consent";
import type { ConsentSource, Contact, ContactPatchInput, ContactUpsertInput } from "./contacts.model";
import type { ContactRow } from "./contacts-rows.repository";
import type { ContactsStore } from "./contacts.repository";
import { newContactShape, shapeOf } from "./contacts.shape";
import { customFieldsStore, type CustomFieldDef } from "./custom-fields.repository";

function mergeCustomFields(current: Record<string, unknown>, given: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!given) return current;
  const out = { ...current };
  for (const [k, v] of Object.entries(given)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Contact ids owning these identities; 409 CONFLICT when they belong to more than one other contact. */
async function owners(store: ContactsStore, companyId: string, identities: CheckedIdentity[]): Promise<Map<string, CheckedIdentity[]>> {
  const byContact = new Map<string, CheckedIdentity[]>();
  for (const i of identities) {
    const found = await store.identityByValue(companyId, i.channel, i.value);
    if (!found) continue;
    const list = byContact.get(found.contactId) ?? [];
    list.push(i);
    byContact.set(found.contactId, list);
  }
  return byContact;
}

function conflict(byContact: Map<string, CheckedIdentity[]>, message: string): AppError {
  const details = [...byContact.entries()].flatMap(([contactId, list]) =>
    list.map((i) => ({ pointer: `/identities/${i.index}`, message: `belongs to contact ${contactId}`, existingContactId: contactId })),
  );
  return new AppError("CONFLICT", message, details);
}

// ------------------------------------------------------------------------------------------ upsert

export interface UpsertOptions {
  /** Consent source for `optIn` (api, or import). */
  source?: ConsentSource;
  /**
   * Import rule: `optIn: true` does not overwrite an explicit opt-out unless `consentAt` (when the consent
   * was collected) is later than that opt-out. Off for the API, where the caller's `optIn` is applied as given.
   */
  protectOptOut?: boolean;
  consentAt?: Date;
  /** Preloaded custom field definitions (imports load them once). */
  defs?: Map<string, CustomFieldDef>;
  /** Tag ids by name known in the caller's transaction (see tags.repository.ts ensureTags). */
  tagIds?: Map<string, string>;
}

export interface UpsertResult {
  created: boolean;
  contact: Contact;
  /** optIn channels left opted_out by the import rule. */
  consentKept: number;
}

type ContactFields = {
  firstName: string | null;
  lastName: string | null;
  city: string | null;
  country: string | null;
  blocked: boolean;
  customFields: Record<string, unknown>;
};

/** Whether a write changes anything (no-op writes emit no event and keep updatedAt). */
function fieldsDiffer(next: ContactFields, row: ContactFields): boolean {
  return (
    next.firstName !== row.firstName ||
    next.lastName !== row.lastName ||
    next.city !== row.city ||
    next.country !== row.country ||
    next.blocked !== row.blocked ||
    !sameJson(next.customFields, row.customFields)
  );
}

/**
 * POST /contacts (seed rules 1–4): the contact owning any of the identities is updated (200, created
 * false), otherwise one is created (201); missing tags are created; identities of two different contacts
 * → 409 CONFLICT. Absent fields are unchanged, null clears; identities not yet known are attached.
 */
export async function upsertContact({
  db,
  events,
  now,
  companyId,
  input,
  options = {},
}: WriteDeps & { companyId: string; input: ContactUpsertInput; options?: UpsertOptions }): Promise<UpsertResult> {
  const checked = checkUpsert(input, options.defs ?? (await customFieldsStore(db).customFieldDefs(companyId)));
  return await db.join(() => applyUpsert({ db, events, at: now().getTime(), companyId, checked, options }));
}

/**
 * The writes of an upsert whose input passed `checkUpsert`; must run inside the caller's transaction.
 * NB! A CONFLICT is thrown before the first write, so a caller may apply many upserts in one transaction
 * without a savepoint each (bulk imports do) — any other throw must roll the caller's transaction back.
 */
export async function applyUpsert({
  db,
  events,
  at,
  companyId,
  checked,
  options = {},
}: {
  db: Db;
  events: Events;
  at: number;
  companyId: string;
  checked: CheckedUpsert;
  options?: UpsertOptions;
}): Promise<UpsertResult> {
  const { identities, tags: tagNames, customFields: fields } = checked;
  const st = storesOf(db);
  const store = st.contacts;
  // The owner is held (holdContact) before the first write; one merged away meanwhile (PostgreSQL: a merge
  // beside this unit committed while it waited) sends it back to the identities, which name the new owner.
  let byContact: Map<string, CheckedIdentity[]>;
  let existingId: string | undefined;
  let row: ContactRow | undefined;
  for (let round = 1; ; round++) {
    byContact = await owners(store, companyId, identities);
    if (byContact.size > 1) throw conflict(byContact, "The identities belong to different contacts");
    existingId = byContact.keys().next().value as string | undefined;
    if (existingId === undefined || (row = await store.holdContact(companyId, existingId))) break;
    if (round >= HOLD_ROUNDS) throw notFound("Contact");
  }
  let changed = false;
  let contactId: string;

  if (existingId === undefined) {
    contactId = newId();
    await store.insertContact({
      id: contactId,
      companyId,
      firstName: checked.firstName ?? null,
      lastName: checked.lastName ?? null,
      city: checked.city ?? null,
      country: checked.country ?? null,
      customFields: mergeCustomFields({}, fields),
      at,
    });
  } else {
    contactId = existingId;
    const current = row!; // (held by the loop above, which ends only with it when there is an owner)
    const next = {
      firstName: pick(checked.firstName, current.firstName),
      lastName: pick(checked.lastName, current.lastName),
      city: pick(checked.city, current.city),
      country: pick(checked.country, current.country),
      customFields: mergeCustomFields(current.customFields, fields),
      blocked: current.blocked,
    };
    if (fieldsDiffer(next, current)) {
      await store.updateContactFields(contactId, { ...next, at });
      changed = true;
    }
  }
  const known = new Set(byContact.get(contactId)?.map((i) => i.index));
  for (const i of identities) {
    if (known.has(i.index)) continue;
    await store.insertIdentity({ companyId, contactId, channel: i.channel, value: i.value, status: i.status, at });
    changed = true;
  }
  if (tagNames?.length && (await st.tags.addContactTags(contactId, await st.tags.ensureTags(companyId, tagNames, at, options.tagIds), at)) > 0) changed = true;

  let consentChanged: string[] = [];
  let consentKept = 0;
  if (checked.optIn !== undefined) {
    const status = checked.optIn ? "opted_in" : "opted_out";
    let channels = [...new Set(identities.map((i) => i.channel))];
    if (status === "opted_in" && options.protectOptOut) {
      const given = channels;
      channels = [];
      for (const channel of given) {
        const current = await store.consentOf(contactId, channel);
        const keep = current?.status === "opted_out" && !(options.consentAt && options.consentAt.getTime() > current.updatedAt);
        if (keep) consentKept++;
        else channels.push(channel);
      }
    }
    consentChanged = await applyConsent(store, { companyId, contactId, channels, status, source: options.source ?? "api", at });
  }

  const created = existingId === undefined;
  if (!created && (changed || consentChanged.length)) await store.touchContact(contactId, at);
  // A new contact's shape is fully known here (no re-read), and built only when something reads it: a bulk
  // import with no webhook endpoint for contact.* never does. An existing contact's shape is read now — later
  // writes of the same transaction must not show in its events.
  let shape: Contact | undefined = created ? undefined : await shapeOf(st, companyId, contactId);
  const contact = (): Contact =>
    (shape ??= newContactShape({ id: contactId, checked, customFields: mergeCustomFields({}, fields), consent: consentChanged, at }));
  if (created) events.emit({ companyId, type: "contact.created", data: () => ({ contact: contact() }) });
  else if (changed) events.emit({ companyId, type: "contact.updated", data: { contact: contact() } });
  if (consentChanged.length) {
    const type = checked.optIn ? "contact.opted_in" : "contact.opted_out";
    for (const channel of consentChanged) events.emit({ companyId, type, data: () => ({ contact: contact(), channel, source: options.source ?? "api" }) });
  }
  return {
    created,
    get contact() {
      return contact();
    },
    consentKept,
  };
}

const pick = <T>(given: T | undefined, current: T): T => (given === undefined ? current : given);

/** PATCH /contacts/{id}: absent = unchanged, null = cleared; `identities` and `tags` replace the sets. */
export async function patchContact({
  db,
  events,
  now,
  companyId,
  id,
  input,
}: WriteDeps & { companyId: string; id: string; input: ContactPatchInput }): Promise<Contact> {
  const st = storesOf(db);
  const store = st.contacts;
  await requireContact(st, companyId, id);
  const errors = new DetailCollector();
  const identities = input.identities && checkIdentities(input.identities, errors);
  const tagNames = checkTags(input.tags, errors);
  const fields = checkCustomFields(input.customFields, await customFieldsStore(db).customFieldDefs(companyId), errors);
  errors.throwIfAny();

  return await db.join(async () => {
    const at = now().getTime();
    const row = await holdContact(st, companyId, id);
    let changed = false;
    const next = {
      firstName: pick(text(input.firstName), row.firstName),
      lastName: pick(text(input.lastName), row.lastName),
      city: pick(text(input.city), row.city),
      country: pick(text(input.country), row.country),
      customFields: mergeCustomFields(row.customFields, fields),
      blocked: input.blocked ?? row.blocked,
    };
    if (fieldsDiffer(next, row)) {
      await store.updateContactFields(id, { ...next, at });
      changed = true;
    }
    if (identities) {
      const byContact = await owners(store, companyId, identities);
      byContact.delete(id);
      if (byContact.size) throw conflict(byContact, "An identity belongs to another contact");
      const wanted = new Set(identities.map((i) => `${i.channel}\u0000${i.value}`));
      const current = await store.identitiesOf([id]);
      const have = new Set(current.map((i) => `${i.channel}\u0000${i.value}`));
      for (const i of current)
        if (!wanted.has(`${i.channel}\u0000${i.value}`)) {
          await store.deleteIdentity(i);
          changed = true;
        }
      for (const i of identities)
        if (!have.has(`${i.channel}\u0000${i.value}`)) {
          await store.insertIdentity({ companyId, contactId: id, channel: i.channel, value: i.value, status: i.status, at });
          changed = true;
        }
    }
    if (tagNames) {
      const wanted = new Set(await st.tags.ensureTags(companyId, tagNames, at));
      for (const tagId of await st.tags.contactTagIds(id)) if (!wanted.has(tagId)) changed = (await st.tags.removeContactTag(id, tagId)) > 0 || changed;
      if ((await st.tags.addContactTags(id, [...wanted], at)) > 0) changed = true;
    }
    if (changed) {
      await store.touchContact(id, at);
      const contact = await shapeOf(st, companyId, id);
      events.emit({ companyId, type: "contact.updated", data: { contact } });
      return contact;
    }
    return await shapeOf(st, companyId, id);
  });
}
