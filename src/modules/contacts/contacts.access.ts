/**
 * What the contacts service files share: the write dependencies (WriteDeps), the stores of a connection found
 * with one lookup (storesOf), and the contact a call is about — required (404) or held until the unit ends.
 */
import type { Db } from "../../db/client";
import { perConnection } from "../../db/per-connection";
import { notFound } from "../../platform/errors";
import type { EventBus } from "../../events";
import type { ContactRow } from "./contacts-rows.repository";
import { contactsStore, type ContactsStore } from "./contacts.repository";
import { tagsStore, type TagsStore } from "./tags.repository";

export type Events = Pick<EventBus, "emit">;
export type Now = () => Date;
export interface WriteDeps {
  db: Db;
  events: Events;
  now: Now;
}

/** The stores a contact's reads and writes reach, found with one lookup per call. */
export type Stores = { contacts: ContactsStore; tags: TagsStore };
export const storesOf = perConnection((db): Stores => ({ contacts: contactsStore(db), tags: tagsStore(db) }));

export async function requireContact(st: Stores, companyId: string, id: string): Promise<ContactRow> {
  const row = await st.contacts.contactById(companyId, id);
  if (!row) throw notFound("Contact");
  return row;
}

/**
 * requireContact for a unit that writes to the contact: held until the unit ends (contacts store `holdContact`), so
 * a merge or a delete beside it (PostgreSQL) waits for it, or it for them — then 404, the contact being gone.
 */
export async function holdContact(st: Stores, companyId: string, id: string): Promise<ContactRow> {
  const row = await st.contacts.holdContact(companyId, id);
  if (!row) throw notFound("Contact");
  return row;
}

/**
 * How often a write looks an identity up again when the contact it named was merged away (or deleted) while it
 * waited for that contact (`holdContact`): each round waited for a merge that has committed since, so a second
 * look finds the identity's new owner; a third covers a chain of merges. More means rows that disagree.
 */
export const HOLD_ROUNDS = 3;
