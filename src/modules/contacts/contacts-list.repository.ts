/**
 * GET /contacts' page of contacts (contacts.list.ts): the filters — tags, channel, consent, a name or identity
 * prefix, creation and update times — and keyset pagination, newest first. Raw statements, as in the store.
 */
import type { StoreDb } from "../../db/client";
import { jsonValues, perEngine, type Engine } from "../../db/dialect";
import { CHANNELS } from "../../channels/channel.types";
import { CONTACT_COLUMNS, toContactRow, type ContactRow, type RawContact } from "./contacts-rows.repository";

/** GET /contacts' filters, checked (contacts.list.ts); `tagIds` are the filter's tags found by name. */
export interface ContactListQuery {
  companyId: string;
  tagIds: string[];
  tagMatch?: "any" | "all";
  channel?: string;
  /** [channel, opted_in | opted_out | unknown] */
  consent?: [string, string];
  q?: string;
  createdAfter?: number;
  updatedAfter?: number;
  before?: string;
  limit: number;
}

const CHANNEL_LIST = CHANNELS.map((c) => `'${c}'`).join(", ");
const TOP = "\u{10FFFF}";

/**
 * The list's statements whose text differs by engine. Name search (GET /contacts `q`): SQLite's FTS5 table
 * contact_search; PostgreSQL's GIN index contacts_name_search_idx on switchboard_name_tsvector(first_name,
 * last_name), which the condition must repeat exactly to use it (migrations-pg/0005: the same words, case and
 * accent folding as FTS5's). Both take what `nameMatch` builds for the engine.
 */
const SQL = perEngine((e) => ({
  anyTag: `c.id IN (SELECT contact_id FROM contact_tags WHERE tag_id IN (${jsonValues(e)}))`,
  nameMatch:
    e === "sqlite"
      ? "c.seq IN (SELECT rowid FROM contact_search WHERE contact_search MATCH ?)"
      : "c.id IN (SELECT s.id FROM contacts s WHERE switchboard_name_tsvector(s.first_name, s.last_name) @@ switchboard_name_tsquery(?))",
}));

/**
 * A name query: every word of `q` as a prefix term, all required; null when `q` has no word. Words split
 * where the index's tokenizer (unicode61) splits — at anything but letters, marks and digits — because a
 * quoted string of two tokens would be a phrase, which the index (detail=none) does not keep. SQLite: an
 * FTS5 query (`"ann"* "sm"*`); PostgreSQL: the words, space-separated, which switchboard_name_tsquery folds
 * as the index does and turns into a tsquery (`'ann':* & 'sm':*`).
 */
function nameMatch(q: string, engine: Engine): string | null {
  const words = q.split(/[^\p{L}\p{M}\p{N}]+/u).filter(Boolean);
  if (!words.length) return null;
  return engine === "sqlite" ? words.map((w) => `"${w}"*`).join(" ") : words.join(" ");
}

/**
 * GET /contacts: keyset pagination newest first (ids are UUID v7), `limit + 1` rows (the caller tells from
 * the extra one that there are more). The tag filter drives the query from contact_tags(tag_id, contact_id)
 * — walking one tag's contacts newest first and stopping after `limit + 1` — so its cost does not grow with
 * the number of contacts in the company.
 */
export async function listContactsPage(db: StoreDb, f: ContactListQuery): Promise<ContactRow[]> {
  const engine = db.engine;
  const sql = SQL[engine];
  const where: string[] = ["c.company_id = ?", "c.deleted_at IS NULL"];
  const args: (string | number)[] = [f.companyId];
  let from = "contacts c";
  let idCol = "c.id";

  const ids = f.tagIds;
  if (ids.length) {
    if (f.tagMatch === "all" || ids.length === 1) {
      // Drive from the first tag's index range; the others must also be present.
      // NB! CROSS JOIN: SQLite keeps that order only so. Without statistics (nothing runs ANALYZE) its
      // planner preferred to walk every contact of the company and look the tag up for each, then sort:
      // 3.7 s a call at 1M contacts against 0.08 ms (bench/RESULTS.md, issue 42). PostgreSQL reads it as
      // an inner join and plans it with its own statistics.
      from = "contact_tags t0 CROSS JOIN contacts c";
      idCol = "t0.contact_id";
      where.unshift("t0.tag_id = ?", "c.id = t0.contact_id");
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
  if (f.channel) {
    where.push("EXISTS (SELECT 1 FROM contact_identities i WHERE i.contact_id = c.id AND i.channel = ?)");
    args.push(f.channel);
  }
  if (f.consent) {
    const [channel, status] = f.consent;
    if (status === "unknown") {
      where.push("NOT EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ?)");
      args.push(channel);
    } else {
      where.push("EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ? AND k.status = ?)");
      args.push(channel, status);
    }
  }
  const q = f.q?.trim().toLowerCase();
  if (q) {
    // Names: word prefixes in the name index (case- and accent-insensitive on both engines; "ann sm" finds
    // "Anna Smith" and "Smith, Anna"). Identities: a prefix of any value (e-mail, phone — with or without the
    // +, handle — with or without the @), one range per channel of the (company, channel, value) primary key.
    const values = new Set([q]);
    if (/^\d/.test(q)) values.add(`+${q}`);
    if (/^[a-z0-9_.]/.test(q)) values.add(`@${q}`);
    const parts = [...values].map(
      () => `SELECT contact_id FROM contact_identities WHERE company_id = ? AND channel IN (${CHANNEL_LIST}) AND value >= ? AND value < ?`,
    );
    const qArgs: string[] = [...values].flatMap((v) => [f.companyId, v, v + TOP]);
    const match = nameMatch(q, engine);
    where.push(`(${match ? `${sql.nameMatch} OR ` : ""}c.id IN (${parts.join(" UNION ALL ")}))`);
    if (match) args.push(match);
    args.push(...qArgs);
  }
  if (f.createdAfter !== undefined) {
    where.push("c.created_at > ?");
    args.push(f.createdAfter);
  }
  if (f.updatedAfter !== undefined) {
    where.push("c.updated_at > ?");
    args.push(f.updatedAfter);
  }
  if (f.before) {
    where.push(`${idCol} < ?`);
    args.push(f.before);
  }
  args.push(f.limit + 1);
  const raw = (await db
    .sql(`SELECT ${CONTACT_COLUMNS} FROM ${from} WHERE ${where.join(" AND ")} ORDER BY ${idCol} DESC LIMIT ?`)
    .all(...args)) as unknown as RawContact[];
  return raw.map(toContactRow);
}
