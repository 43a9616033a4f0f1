/**
 * GET /contacts: keyset pagination newest first (ids are UUID v7) with filters. The tag filter drives the
 * query from contact_tags(tag_id, contact_id) — walking one tag's contacts newest first and stopping after
 * `limit + 1` — so its cost does not grow with the number of contacts in the company.
 */
import type { Db } from "../../db/client";
import { jsonValues, perEngine } from "../../db/dialect";
import { DetailCollector } from "../../platform/errors";
import { CHANNELS } from "../../channels/channel.types";
import type { Contact } from "./contacts.model";
import { CONTACT_COLUMNS, toContactRow } from "./contacts.repository";
import { toContacts } from "./contacts.service";

const CHANNEL_LIST = CHANNELS.map((c) => `'${c}'`).join(", ");

export interface ContactFilters {
  tags?: string[];
  tagMatch?: "any" | "all";
  channel?: string;
  consent?: string;
  q?: string;
  createdAfter?: string;
  updatedAfter?: string;
}

const TOP = "\u{10FFFF}";

/**
 * The engine-bound parts of the list query. Name search: SQLite's FTS5 table contact_search; PostgreSQL's
 * GIN index contacts_name_search_idx on switchboard_name_tsvector(first_name, last_name), which the condition
 * must repeat exactly to use it (migrations-pg/0005: the same words, case and accent folding as FTS5's). Both
 * take what `nameMatch` builds for the engine.
 */
const SQL = perEngine((e) => ({
  tagIdsByName: `SELECT id FROM tags WHERE company_id = ? AND name IN (${jsonValues(e)})`,
  anyTag: `c.id IN (SELECT contact_id FROM contact_tags WHERE tag_id IN (${jsonValues(e)}))`,
  nameMatch:
    e === "sqlite"
      ? "c.seq IN (SELECT rowid FROM contact_search WHERE contact_search MATCH ?)"
      : "c.id IN (SELECT s.id FROM contacts s WHERE switchboard_name_tsvector(s.first_name, s.last_name) @@ switchboard_name_tsquery(?))",
}));

function parseTime(v: string | undefined, name: string, errors: DetailCollector): number | undefined {
  if (v === undefined) return undefined;
  const t = /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(t)) errors.add(`query:${name}`, "must be an ISO 8601 date-time");
  return t;
}

export function listContacts({
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
}): { rows: Contact[]; more: boolean } {
  const sqlite = db.$client;
  const sql = SQL[db.engine];
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

  const where: string[] = ["c.company_id = ?", "c.deleted_at IS NULL"];
  const args: (string | number)[] = [companyId];
  let from = "contacts c";
  let idCol = "c.id";

  const names = [...new Set((filters.tags ?? []).map((t) => t.trim()).filter(Boolean))];
  if (names.length) {
    const found = sqlite
      .query(sql.tagIdsByName)
      .all(companyId, JSON.stringify(names)) as { id: string }[];
    const all = filters.tagMatch === "all";
    if (!found.length || (all && found.length < names.length)) return { rows: [], more: false };
    const ids = found.map((f) => f.id);
    if (all || ids.length === 1) {
      // Drive from the first tag's index range; the others must also be present.
      from = "contact_tags t0 JOIN contacts c ON c.id = t0.contact_id";
      idCol = "t0.contact_id";
      where.unshift("t0.tag_id = ?");
      args.unshift(ids[0]!);
      for (const id of ids.slice(1)) {
        where.push("EXISTS (SELECT 1 FROM contact_tags tx WHERE tx.contact_id = c.id AND tx.tag_id = ?)");
        args.push(id);
      }
    } else {
      where.push(sql.anyTag);
      args.push(JSON.stringify(ids));
    }
  }
  if (filters.channel) {
    where.push("EXISTS (SELECT 1 FROM contact_identities i WHERE i.contact_id = c.id AND i.channel = ?)");
    args.push(filters.channel);
  }
  if (consent) {
    const [channel, status] = consent;
    if (status === "unknown") {
      where.push("NOT EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ?)");
      args.push(channel);
    } else {
      where.push("EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ? AND k.status = ?)");
      args.push(channel, status);
    }
  }
  const q = filters.q?.trim().toLowerCase();
  if (q) {
    // Names: word prefixes in the name index (case- and accent-insensitive on both engines; "ann sm" finds
    // "Anna Smith" and "Smith, Anna"). Identities: a prefix of any value (e-mail, phone — with or without the
    // +, handle — with or without the @), one range per channel of the (company, channel, value) primary key.
    const values = new Set([q]);
    if (/^\d/.test(q)) values.add(`+${q}`);
    if (/^[a-z0-9_.]/.test(q)) values.add(`@${q}`);
    const parts = [...values].map(() => `SELECT contact_id FROM contact_identities WHERE company_id = ? AND channel IN (${CHANNEL_LIST}) AND value >= ? AND value < ?`);
    const qArgs: string[] = [...values].flatMap((v) => [companyId, v, v + TOP]);
    const match = nameMatch(q, db.engine);
    where.push(`(${match ? `${sql.nameMatch} OR ` : ""}c.id IN (${parts.join(" UNION ALL ")}))`);
    if (match) args.push(match);
    args.push(...qArgs);
  }
  if (createdAfter !== undefined) {
    where.push("c.created_at > ?");
    args.push(createdAfter);
  }
  if (updatedAfter !== undefined) {
    where.push("c.updated_at > ?");
    args.push(updatedAfter);
  }
  if (before) {
    where.push(`${idCol} < ?`);
    args.push(before);
  }
  args.push(limit + 1);
  const raw = sqlite.query(`SELECT ${CONTACT_COLUMNS} FROM ${from} WHERE ${where.join(" AND ")} ORDER BY ${idCol} DESC LIMIT ?`).all(...args) as never[];
  const rows = raw.map(toContactRow);
  const more = rows.length > limit;
  return { rows: toContacts(sqlite, more ? rows.slice(0, limit) : rows), more };
}

/**
 * A name query: every word of `q` as a prefix term, all required; null when `q` has no word. Words split
 * where the index's tokenizer (unicode61) splits — at anything but letters, marks and digits — because a
 * quoted string of two tokens would be a phrase, which the index (detail=none) does not keep. SQLite: an
 * FTS5 query (`"ann"* "sm"*`); PostgreSQL: the words, space-separated, which switchboard_name_tsquery folds
 * as the index does and turns into a tsquery (`'ann':* & 'sm':*`).
 */
function nameMatch(q: string, engine: Db["engine"]): string | null {
  const words = q.split(/[^\p{L}\p{M}\p{N}]+/u).filter(Boolean);
  if (!words.length) return null;
  return engine === "sqlite" ? words.map((w) => `"${w}"*`).join(" ") : words.join(" ");
}
