/**
 * Contacts: identities, consent, tags, custom fields — the rules, no HTTP. This file holds the contract for
 * other modules and the small writes (delete, tags); beside it: the API shape (contacts.shape.ts), consent
 * (contacts.consent.ts), upsert and patch (contacts.upsert.ts), and what they share (contacts.access.ts).
 *
 * Contract for other modules (issue 35's asynchronous store contract: the writes join the caller's unit):
 *   normaliseIdentity (synchronous), findContactByIdentity, getContact, findOrCreateContactByIdentity,
 *   contactSendFacts, identityOf here; getConsent, setConsent in contacts.consent.ts.
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
import { DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { HOLD_ROUNDS, holdContact, requireContact, storesOf, type WriteDeps } from "./contacts.access";
import { checkTags } from "./contacts.checks";
import type { ConsentStatus, Contact } from "./contacts.model";
import type { ContactRow, IdentityRow } from "./contacts-rows.repository";
import { contactsStore, type ContactsStore } from "./contacts.repository";
import { shapeOf } from "./contacts.shape";
import { normaliseIdentity, tryNormaliseIdentity } from "./identity";

export { normaliseIdentity } from "./identity";
export type { ContactRow, IdentityRow } from "./contacts-rows.repository";

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
  // Sent together (PostgreSQL: pipelined, one round trip; SQLite: each answers at once): none waits for another.
  const [c, addressed, consent] = await Promise.all([
    // Held (holdContact) when read here: the send writes its message on this contact in the same unit, and a merge
    // beside it must not move the contact's rows before that message exists (or after, without it).
    contact && contact.id === contactId && contact.companyId === companyId ? contact : store.holdContact(companyId, contactId),
    identity && identity.contactId === contactId && identity.channel === channel ? identity : store.identityOfContact(contactId, channel),
    store.consentOf(contactId, channel),
  ]);
  if (!c) return undefined;
  return { identity: addressed, blocked: c.blocked, consent: consent?.status ?? "unknown" };
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
      // First the identity with its contact held (on PostgreSQL one statement); one by one when that finds no pair.
      const both = round === 1 ? await store.identityWithHeldContact(companyId, channel, n.value) : undefined;
      let identity = both ? both.identity : await store.identityByValue(companyId, channel, n.value);
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
        let contact = both?.contact ?? (await store.holdContact(companyId, identity.contactId));
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

// ------------------------------------------------------------------------------------------ delete, tags

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
