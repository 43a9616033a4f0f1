/**
 * The Contact API shape (DESIGN §5): of stored contacts, many with three batched queries (toContacts, shapeOf),
 * and of a contact an upsert has just created, built from its input without a read (newContactShape).
 */
import type { Db } from "../../db/client";
import { notFound } from "../../platform/errors";
import { storesOf, type Stores } from "./contacts.access";
import type { CheckedUpsert } from "./contacts.checks";
import type { Contact } from "./contacts.model";
import type { ContactRow } from "./contacts-rows.repository";

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

export async function shapeOf(st: Stores, companyId: string, id: string): Promise<Contact> {
  const row = await st.contacts.contactById(companyId, id);
  if (!row) throw notFound("Contact");
  return (await shapes(st, [row]))[0]!;
}

export function newContactShape(c: { id: string; checked: CheckedUpsert; customFields: Record<string, unknown>; consent: string[]; at: number }): Contact {
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
