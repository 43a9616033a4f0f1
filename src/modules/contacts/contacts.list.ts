/**
 * GET /contacts: keyset pagination newest first (ids are UUID v7) with filters — checked here (422 naming each),
 * the page read by the contacts store (contacts.repository.ts `listPage`, which says how the tag filter stays
 * cheap), then shaped.
 */
import type { Db } from "../../db/client";
import { DetailCollector } from "../../platform/errors";
import { CHANNELS } from "../../channels/channel.types";
import type { Contact } from "./contacts.model";
import { contactsStore } from "./contacts.repository";
import { toContacts } from "./contacts.shape";
import { tagsStore } from "./tags.repository";

export interface ContactFilters {
  tags?: string[];
  tagMatch?: "any" | "all";
  channel?: string;
  consent?: string;
  q?: string;
  createdAfter?: string;
  updatedAfter?: string;
}

function parseTime(v: string | undefined, name: string, errors: DetailCollector): number | undefined {
  if (v === undefined) return undefined;
  const t = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(t)) errors.add(`query:${name}`, "must be an ISO 8601 date-time");
  return t;
}

export async function listContacts({
  db,
  companyId,
  filters,
  limit,
  before,
}: {
  db: Db;
  companyId: string;
  filters: ContactFilters;
  limit: number;
  before?: string;
}): Promise<{ rows: Contact[]; more: boolean }> {
  const errors = new DetailCollector();
  const createdAfter = parseTime(filters.createdAfter, "createdAfter", errors);
  const updatedAfter = parseTime(filters.updatedAfter, "updatedAfter", errors);
  let consent: [string, string] | undefined;
  if (filters.consent !== undefined) {
    const [ch, st] = filters.consent.split(":");
    if (!ch || !(CHANNELS as readonly string[]).includes(ch) || !st || !["opted_in", "opted_out", "unknown"].includes(st))
      errors.add("query:consent", "must be <channel>:<opted_in|opted_out|unknown>, e.g. whatsapp:opted_in");
    else consent = [ch, st];
  }
  if (filters.channel !== undefined && !(CHANNELS as readonly string[]).includes(filters.channel))
    errors.add("query:channel", `must be one of ${CHANNELS.join(", ")}`);
  errors.throwIfAny();

  const names = [...new Set((filters.tags ?? []).map((t) => t.trim()).filter(Boolean))];
  let tagIds: string[] = [];
  if (names.length) {
    tagIds = await tagsStore(db).tagIdsByName(companyId, names);
    if (!tagIds.length || (filters.tagMatch === "all" && tagIds.length < names.length)) return { rows: [], more: false };
  }
  const rows = await contactsStore(db).listPage({
    companyId,
    tagIds,
    tagMatch: filters.tagMatch,
    channel: filters.channel,
    consent,
    q: filters.q,
    createdAfter,
    updatedAfter,
    before,
    limit,
  });
  const more = rows.length > limit;
  return { rows: await toContacts(db, more ? rows.slice(0, limit) : rows), more };
}
