/**
 * The contacts store's rows: the shapes services see (ContactRow, IdentityRow, ConsentRow), the raw rows the
 * statements return, and the mapping between them — shared by the store (contacts.repository.ts), its list
 * page (contacts-list.repository.ts) and an import's held writes (contacts-held-writes.repository.ts).
 */

export interface ContactRow {
  id: string;
  companyId: string;
  firstName: string | null;
  lastName: string | null;
  city: string | null;
  country: string | null;
  customFields: Record<string, unknown>;
  blocked: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface IdentityRow {
  companyId: string;
  contactId: string;
  channel: string;
  value: string;
  status: "verified" | "pending";
  createdAt: Date;
}

export interface ConsentRow {
  contactId: string;
  channel: string;
  status: "opted_in" | "opted_out";
  source: string;
  updatedAt: number;
}

export interface RawContact {
  id: string;
  company_id: string;
  first_name: string | null;
  last_name: string | null;
  city: string | null;
  country: string | null;
  custom_fields: string;
  blocked: number;
  created_at: number;
  updated_at: number;
}

export interface RawIdentity {
  company_id: string;
  contact_id: string;
  channel: string;
  value: string;
  status: "verified" | "pending";
  created_at: number;
}

export const CONTACT_COLUMNS = "c.id, c.company_id, c.first_name, c.last_name, c.city, c.country, c.custom_fields, c.blocked, c.created_at, c.updated_at";

export function toContactRow(r: RawContact): ContactRow {
  return {
    id: r.id,
    companyId: r.company_id,
    firstName: r.first_name,
    lastName: r.last_name,
    city: r.city,
    country: r.country,
    customFields: JSON.parse(r.custom_fields),
    blocked: r.blocked === 1,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

export const toIdentityRow = (r: RawIdentity): IdentityRow => ({
  companyId: r.company_id,
  contactId: r.contact_id,
  channel: r.channel,
  value: r.value,
  status: r.status,
  createdAt: new Date(r.created_at),
});

/** Verified before pending, then oldest, then by value. */
export function identityRank(a: RawIdentity, b: RawIdentity): number {
  const pa = a.status === "pending" ? 1 : 0;
  const pb = b.status === "pending" ? 1 : 0;
  if (pa !== pb) return pa - pb;
  if (a.created_at !== b.created_at) return a.created_at - b.created_at;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}
