/**
 * Contacts: identities, consent, tags, custom fields — the rules, no HTTP.
 *
 * Contract for other modules (issue 35's asynchronous store contract: the writes join the caller's unit):
 *   normaliseIdentity (synchronous), findContactByIdentity, getContact, findOrCreateContactByIdentity,
 *   contactSendFacts, getConsent, setConsent, identityOf.
 *
 * Invariants:
 * - One contact per (company, channel, normalised value): the unique index on contact_identities.
 *   Every write runs in one IMMEDIATE transaction on the single writer connection, so a read-then-insert
 *   cannot interleave in-process; the index is the backstop.
 * - Every change emits its event (contact.created|updated|deleted|opted_in|opted_out) inside the same
 *   transaction, carrying the Contact shape as it is after the change.
 * - A failed call changes nothing: validation happens before the first write, and conflicts throw inside
 *   the transaction (rolled back).
 */
import type { Db } from "../../db/client";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import type { EventBus } from "../../events";
import { newId } from "../../platform/ids";
import type { Contact, ConsentSource, ConsentStatus, ContactPatchInput, ContactUpsertInput } from "./contacts.model";
import { contactsStore, type ContactRow, type ContactsStore, type IdentityRow } from "./contacts.repository";
import { customFieldsStore, type CustomFieldDef } from "./custom-fields.repository";
import { perConnection } from "../../db/per-connection";
import { tagsStore, type TagsStore } from "./tags.repository";
import { checkCustomFields, checkIdentities, checkTags, checkUpsert, text, type CheckedIdentity, type CheckedUpsert } from "./contacts.checks";
import { normaliseIdentity, tryNormaliseIdentity } from "./identity";

export { normaliseIdentity } from "./identity";
export type { ContactRow, IdentityRow } from "./contacts.repository";

type Events = Pick<EventBus, "emit">;
type Now = () => Date;
interface WriteDeps {
  db: Db;
  events: Events;
  now: Now;
}

/** The stores a contact's reads and writes reach, found with one lookup per call. */
type Stores = { contacts: ContactsStore; tags: TagsStore };
const storesOf = perConnection((db): Stores => ({ contacts: contactsStore(db), tags: tagsStore(db) }));

// ------------------------------------------------------------------------------------------ shapes

/** API shapes (DESIGN §5) of many contacts with three batched queries. */
export async function toContacts(db: Db, rows: ContactRow[]): Promise<Contact[]> {
  return await shapes(storesOf(db), rows);
}

async function shapes(st: Stores, rows: ContactRow[]): Promise<Contact[]> {
  const ids = rows.map((r) => r.id);
  const identities = Map.groupBy(await st.contacts.identitiesOf(ids), (i) => i.contactId);
  const tags = Map.groupBy(await st.tags.tagNamesOf(ids), (t) => t.contactId);
  const consents = Map.groupBy(await st.contacts.consentsOf(ids), (c) => c.contactId);
  return rows.map((r) => {
    const ids = identities.get(r.id) ?? [];
    const consent: Contact["consent"] = {};
    for (const i of ids) consent[i.channel] = { status: "unknown", updatedAt: null };
    for (const c of consents.get(r.id) ?? []) consent[c.channel] = { status: c.status, updatedAt: new Date(c.updatedAt).toISOString() };
    return {
      id: r.id,
      firstName: r.firstName,
      lastName: r.lastName,
      city: r.city,
      country: r.country,
      identities: ids.map((i) => ({ channel: i.channel, value: i.value, status: i.status })),
      tags: (tags.get(r.id) ?? []).map((t) => t.name),
      customFields: r.customFields,
      consent,
      blocked: r.blocked,
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    };
  });
}

async function shapeOf(st: Stores, companyId: string, id: string): Promise<Contact> {
  const row = await st.contacts.contactById(companyId, id);
  if (!row) throw notFound("Contact");
  return (await shapes(st, [row]))[0]!;
}

async function requireContact(st: Stores, companyId: string, id: string): Promise<ContactRow> {
  const row = await st.contacts.contactById(companyId, id);
  if (!row) throw notFound("Contact");
  return row;
}

/**
 * requireContact for a unit that writes to the contact: held until the unit ends (contacts store `holdContact`), so
 * a merge or a delete beside it (PostgreSQL) waits for it, or it for them — then 404, the contact being gone.
 */
async function holdContact(st: Stores, companyId: string, id: string): Promise<ContactRow> {
  const row = await st.contacts.holdContact(companyId, id);
  if (!row) throw notFound("Contact");
  return row;
}

/**
 * How often a write looks an identity up again when the contact it named was merged away (or deleted) while it
 * waited for that contact (`holdContact`): each round waited for a merge that has committed since, so a second
 * look finds the identity's new owner; a third covers a chain of merges. More means rows that disagree.
 */
const HOLD_ROUNDS = 3;

// ------------------------------------------------------------------------------------------ contract

/** The contact owning this identity (value normalised first; a pending `@username` matches too). */
export async function findContactByIdentity({
  db,
  companyId,
  channel,
  value,
}: {
  db: Db;
  companyId: string;
  channel: string;
  value: string;
}): Promise<ContactRow | undefined> {
  const n = tryNormaliseIdentity(channel, value);
  if ("error" in n) return undefined;
  const store = contactsStore(db);
  const identity = await store.identityByValue(companyId, channel, n.value);
  return identity ? await store.contactById(companyId, identity.contactId) : undefined;
}

/** The Contact API shape; 404 NOT_FOUND for unknown, foreign or deleted ids. */
export async function getContact({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<Contact> {
  return await shapeOf(storesOf(db), companyId, id);
}

/** The identity to address a contact on a channel (verified before pending). */
export async function identityOf({
  db,
  companyId,
  contactId,
  channel,
}: {
  db: Db;
  companyId: string;
  contactId: string;
  channel: string;
}): Promise<IdentityRow | undefined> {
  const i = await contactsStore(db).identityOfContact(contactId, channel);
  return i && i.companyId === companyId ? i : undefined;
}

/**
 * The facts a send is decided on (channels/channel.eligibility.ts) for one contact: its identity on the
 * channel (verified before pending), blocked, consent there. Undefined for unknown, foreign or deleted ids.
 */
export async function contactSendFacts({
  db,
  companyId,
  contactId,
  channel,
  contact,
  identity,
}: {
  db: Db;
  companyId: string;
  contactId: string;
  channel: string;
  /** The contact's row when the caller read (and held) it in this unit (findOrCreateContactByIdentity): not read again. */
  contact?: { id: string; companyId: string; blocked: boolean };
  /** The identity the caller addresses (found by its value in this transaction): the one the facts are about. */
  identity?: IdentityRow;
}): Promise<{ identity: IdentityRow | undefined; blocked: boolean; consent: ConsentStatus } | undefined> {
  const store = contactsStore(db);
  // Held (holdContact) when read here: the send writes its message on this contact in the same unit, and a merge
  // beside it must not move the contact's rows before that message exists (or after, without it).
  const c = contact && contact.id === contactId && contact.companyId === companyId ? contact : await store.holdContact(companyId, contactId);
  if (!c) return undefined;
  const addressed = identity && identity.contactId === contactId && identity.channel === channel ? identity : await store.identityOfContact(contactId, channel);
  return { identity: addressed, blocked: c.blocked, consent: (await store.consentOf(contactId, channel))?.status ?? "unknown" };
}

/**
 * Finds the contact of an identity, or creates it when `create` is true (outbound `to.phone|email|handle`
 * with createContact, and every inbound sender). For inbound senders pass the platform user id as `value`
 * and the sender's `username`: a pending `@username` identity on that channel is then resolved to the
 * user id (status verified) instead of a second contact being created. `displayName` fills the names of
 * a contact that has none. Returns null only when not found and `create` is false.
 * NB! Throws 422 VALIDATION_FAILED (pointer `/value`) for a value that cannot be normalised.
 */
export async function findOrCreateContactByIdentity({
  db,
  events,
  now,
  companyId,
  channel,
  value,
  displayName,
  username,
  create,
}: WriteDeps & {
  companyId: string;
  channel: string;
  value: string;
  displayName?: string | null;
  username?: string | null;
  create: boolean;
}): Promise<{ contact: ContactRow; identity: IdentityRow; created: boolean } | null> {
  const n = normaliseIdentity({ channel, value });
  const st = storesOf(db);
  const store = st.contacts;
  // Callers let a throw reach their own unit (resolveRecipient rethrows it with another pointer).
  return await db.join(async () => {
    const at = now().getTime();
    // The identity's contact is held (holdContact) before anything is written for it: a merge beside this unit
    // (PostgreSQL) then waits until it has committed, and moves what it wrote. One that got there first makes it
    // wait, and the contact is gone once it may go on: the identity is looked up again (its owner now).
    for (let round = 1; ; round++) {
      let identity = await store.identityByValue(companyId, channel, n.value);
      if (!identity && username) {
        const handle = `@${username.replace(/^@/, "")}`.toLowerCase();
        const pending = await store.identityByValue(companyId, channel, handle);
        if (pending && pending.status === "pending" && n.status === "verified") {
          if (!(await store.holdContact(companyId, pending.contactId))) {
            if (round < HOLD_ROUNDS) continue;
            throw notFound("Contact");
          }
          await store.resolveIdentity(pending, n.value);
          identity = { ...pending, value: n.value, status: "verified" };
          await fillNames(store, identity.contactId, displayName, at);
          await store.touchContact(identity.contactId, at);
          events.emit({ companyId, type: "contact.updated", data: { contact: await shapeOf(st, companyId, identity.contactId) } });
          return { contact: (await store.contactById(companyId, identity.contactId))!, identity, created: false };
        }
      }
      if (identity) {
        let contact = await store.holdContact(companyId, identity.contactId);
        if (!contact) {
          if (round < HOLD_ROUNDS) continue;
          throw notFound("Contact");
        }
        if (await fillNames(store, identity.contactId, displayName, at)) {
          events.emit({ companyId, type: "contact.updated", data: { contact: await shapeOf(st, companyId, identity.contactId) } });
          contact = (await store.contactById(companyId, identity.contactId))!; // (its names as filled)
        }
        return { contact, identity, created: false };
      }
      if (!create) return null;
      const [firstName, lastName] = splitName(displayName);
      const id = newId();
      await store.insertContact({ id, companyId, firstName, lastName, city: null, country: null, customFields: {}, at });
      const created = await store.insertIdentity({ companyId, contactId: id, channel, value: n.value, status: n.status, at });
      events.emit({ companyId, type: "contact.created", data: { contact: await shapeOf(st, companyId, id) } });
      return { contact: (await store.contactById(companyId, id))!, identity: created, created: true };
    }
  });
}

function splitName(displayName: string | null | undefined): [string | null, string | null] {
  const parts = (displayName ?? "").trim().split(/\s+/).filter(Boolean);
  if (!parts.length) return [null, null];
  return [parts[0]!.slice(0, 200), parts.slice(1).join(" ").slice(0, 200) || null];
}

/** Fills first/last name from a display name when the contact has neither. Returns whether it wrote. */
async function fillNames(store: ContactsStore, contactId: string, displayName: string | null | undefined, at: number): Promise<boolean> {
  if (!displayName) return false; // (every outbound send finds its contact with none)
  const [firstName, lastName] = splitName(displayName);
  if (!firstName) return false;
  return await store.fillNames(contactId, firstName, lastName, at);
}

export async function getConsent({
  db,
  companyId,
  contactId,
  channel,
}: {
  db: Db;
  companyId: string;
  contactId: string;
  channel: string;
}): Promise<ConsentStatus> {
  const store = contactsStore(db);
  const c = await store.consentOf(contactId, channel);
  if (!c) return "unknown";
  return (await store.companyOf(contactId)) === companyId ? c.status : "unknown";
}

/**
 * Sets consent on channels; writes a history row and emits contact.opted_in / contact.opted_out
 * (`{contact, channel, source}`) per channel whose status actually changes. Unchanged channels are no-ops.
 * Does not check that the contact has an identity on the channel (the API's opt-in/out routes do).
 */
export async function setConsent(
  input: WriteDeps & { companyId: string; contactId: string; channels: string[]; status: "opted_in" | "opted_out"; source: ConsentSource },
): Promise<void> {
  const { db, events, now, companyId, contactId, channels, status, source } = input;
  const st = storesOf(db);
  // In the caller's unit when there is one (no savepoint: a throw undoes the caller's writes too, as `within` did).
  await db.join(async () => {
    await holdContact(st, companyId, contactId);
    const at = now().getTime();
    const changed = await applyConsent(st.contacts, { companyId, contactId, channels, status, source, at });
    if (changed.length) {
      await st.contacts.touchContact(contactId, at);
      await emitConsentEvents(st, events, { companyId, contactId, channels: changed, status, source });
    }
  });
}

async function applyConsent(
  store: ContactsStore,
  c: { companyId: string; contactId: string; channels: string[]; status: "opted_in" | "opted_out"; source: ConsentSource; at: number },
): Promise<string[]> {
  const changed: string[] = [];
  for (const channel of new Set(c.channels)) {
    if ((await store.consentOf(c.contactId, channel))?.status === c.status) continue;
    await store.writeConsent({ ...c, channel });
    changed.push(channel);
  }
  return changed;
}

async function emitConsentEvents(
  st: Stores,
  events: Events,
  c: { companyId: string; contactId: string; channels: string[]; status: "opted_in" | "opted_out"; source: ConsentSource },
): Promise<void> {
  if (!c.channels.length) return;
  const contact = await shapeOf(st, c.companyId, c.contactId);
  const type = c.status === "opted_in" ? "contact.opted_in" : "contact.opted_out";
  for (const channel of c.channels) events.emit({ companyId: c.companyId, type, data: { contact, channel, source: c.source } });
}

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

function newContactShape(c: { id: string; checked: CheckedUpsert; customFields: Record<string, unknown>; consent: string[]; at: number }): Contact {
  const when = new Date(c.at).toISOString();
  const identities = [...c.checked.identities].sort((a, b) => (a.channel < b.channel ? -1 : a.channel > b.channel ? 1 : 0));
  const consent: Contact["consent"] = {};
  for (const i of identities) consent[i.channel] = { status: "unknown", updatedAt: null };
  for (const ch of c.consent) consent[ch] = { status: c.checked.optIn ? "opted_in" : "opted_out", updatedAt: when };
  return {
    id: c.id,
    firstName: c.checked.firstName ?? null,
    lastName: c.checked.lastName ?? null,
    city: c.checked.city ?? null,
    country: c.checked.country ?? null,
    identities: identities.map((i) => ({ channel: i.channel, value: i.value, status: i.status })),
    tags: [...(c.checked.tags ?? [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
    customFields: c.customFields,
    consent,
    blocked: false,
    createdAt: when,
    updatedAt: when,
  };
}

const pick = <T>(given: T | undefined, current: T): T => (given === undefined ? current : given);

// ------------------------------------------------------------------------------------------ patch / delete

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

/** DELETE: erases personal data, identities, tags and consent; the id stays as a tombstone (404 from now on). */
export async function deleteContact({ db, events, now, companyId, id }: WriteDeps & { companyId: string; id: string }): Promise<{ id: string; deleted: true }> {
  const st = storesOf(db);
  return await db.join(async () => {
    // Locked as a merge locks it: a send or an upsert holding the contact commits first (its rows are then
    // erased with the rest), and one coming later waits and finds it gone.
    const row = (await st.contacts.lockForErase(companyId, id)) ?? null;
    if (!row) throw notFound("Contact");
    const at = now().getTime();
    await st.contacts.eraseContact(id, at);
    const contact: Contact = {
      id,
      firstName: null,
      lastName: null,
      city: null,
      country: null,
      identities: [],
      tags: [],
      customFields: {},
      consent: {},
      blocked: false,
      createdAt: row.createdAt.toISOString(),
      updatedAt: new Date(at).toISOString(),
    };
    events.emit({ companyId, type: "contact.deleted", data: { contact } });
    return { id, deleted: true as const };
  });
}

// ------------------------------------------------------------------------------------------ tags, consent routes

export async function addTags({ db, events, now, companyId, id, tags }: WriteDeps & { companyId: string; id: string; tags: string[] }): Promise<Contact> {
  const st = storesOf(db);
  await requireContact(st, companyId, id);
  const errors = new DetailCollector();
  const names = checkTags(tags, errors)!;
  errors.throwIfAny();
  return await db.join(async () => {
    await holdContact(st, companyId, id);
    const at = now().getTime();
    if ((await st.tags.addContactTags(id, await st.tags.ensureTags(companyId, names, at), at)) > 0) {
      await st.contacts.touchContact(id, at);
      const contact = await shapeOf(st, companyId, id);
      events.emit({ companyId, type: "contact.updated", data: { contact } });
      return contact;
    }
    return await shapeOf(st, companyId, id);
  });
}

/** Removes a tag from a contact; 404 for an unknown tag name, a no-op when the contact does not carry it. */
export async function removeTag({ db, events, now, companyId, id, tagName }: WriteDeps & { companyId: string; id: string; tagName: string }): Promise<Contact> {
  const st = storesOf(db);
  return await db.join(async () => {
    await holdContact(st, companyId, id);
    const tag = await st.tags.tagByName(companyId, tagName.trim());
    if (!tag) throw notFound("Tag");
    if ((await st.tags.removeContactTag(id, tag.id)) > 0) {
      await st.contacts.touchContact(id, now().getTime());
      const contact = await shapeOf(st, companyId, id);
      events.emit({ companyId, type: "contact.updated", data: { contact } });
      return contact;
    }
    return await shapeOf(st, companyId, id);
  });
}

/** POST /contacts/{id}/opt-in|opt-out: each channel must be one the contact has an identity on (else 422). */
export async function changeConsent({
  db,
  events,
  now,
  companyId,
  id,
  channels,
  status,
}: WriteDeps & { companyId: string; id: string; channels: string[]; status: "opted_in" | "opted_out" }): Promise<Contact> {
  const st = storesOf(db);
  return await db.join(async () => {
    await holdContact(st, companyId, id);
    const have = new Set((await st.contacts.identitiesOf([id])).map((i) => i.channel));
    const errors = new DetailCollector();
    channels.forEach((c, i) => {
      if (!have.has(c)) errors.add(`/channels/${i}`, `the contact has no ${c} identity`);
    });
    errors.throwIfAny();
    await setConsent({ db, events, now, companyId, contactId: id, channels, status, source: "api" });
    return await shapeOf(st, companyId, id);
  });
}
