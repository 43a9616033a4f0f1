/**
 * Consent: a contact's status on a channel (getConsent), changes with their history rows and events
 * (setConsent, applyConsent for writes already inside a contact's unit), and the API's opt-in/opt-out route
 * (changeConsent).
 */
import type { Db } from "../../db/client";
import { DetailCollector } from "../../platform/errors";
import { holdContact, storesOf, type Events, type Stores, type WriteDeps } from "./contacts.access";
import type { ConsentSource, ConsentStatus, Contact } from "./contacts.model";
import { contactsStore, type ContactsStore } from "./contacts.repository";
import { shapeOf } from "./contacts.shape";

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

export async function applyConsent(
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
