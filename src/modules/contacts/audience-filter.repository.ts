/**
 * A contact filter (audience-filter.ts) compiled into ONE parameterised SQL condition over `contacts c`, on
 * either engine: what the audience store puts in its member, page and count statements (audience.repository.ts),
 * so the segment count, the campaign estimate and the fan-out read one definition of "in the audience".
 *
 * Each predicate is true or false, never NULL (an EXISTS, or a comparison inside `coalesce(…, FALSE)`): `NOT`
 * must be the complement, and SQL's NOT of an unknown stays unknown.
 *
 * Where each field lives: `tag` contact_tags ⋈ tags (by name); `customFields.<key>` contacts.custom_fields
 * (JSON text); `consent.<channel>` contact_consents (no row: unknown); `identity.<channel>` contact_identities
 * (either status); `createdAt`, `city`, `country`, `blocked` contacts; `lastInboundAt` max of
 * contact_channel_state.last_inbound_at over the contact's accounts (all, or those of one channel — the state is
 * kept per account; a probe of its primary key (contact_id, channel_account_id)); `source` contact_sources.source_id.
 *
 * Kept free of app imports (db/ and type imports only) like the audience store.
 */
import { jsonText, jsonValues, type Engine } from "../../db/dialect";
import type { ResolvedField, ResolvedFilter } from "./audience-filter";

/** A compiled filter: SQL over `contacts c` with `?N` parameters numbered from the `first` given to compileFilter. */
export interface CompiledFilter {
  sql: string;
  params: (string | number)[];
}

/**
 * Compiles `f` for `engine`; its parameters are numbered `?first`, `?first+1`, … (the caller's statement
 * holds the ones before). The text differs with the tree: prepare it per use, do not cache it by text.
 */
export function compileFilter(engine: Engine, f: ResolvedFilter, first: number): CompiledFilter {
  const params: (string | number)[] = [];
  const param = (v: string | number) => {
    params.push(v);
    return `?${first + params.length - 1}`;
  };
  const pg = engine === "postgres";
  const list = (values: (string | number)[], cast?: string) => jsonValues(engine, param(JSON.stringify(values)), cast);
  const safe = (cond: string) => `coalesce(${cond}, FALSE)`;

  /** A custom field's value as SQL (typed: numbers only where it is a number, so PostgreSQL's cast cannot fail). */
  const custom = (key: string, type: string): string => {
    const text = jsonText(engine, "c.custom_fields", [key]);
    if (type !== "number") return text;
    return pg
      ? `(CASE WHEN json_typeof(c.custom_fields::json -> '${key}') = 'number' THEN ${text}::double precision END)`
      : `(CASE WHEN json_type(c.custom_fields, '$.${key}') IN ('integer', 'real') THEN ${text} END)`;
  };
  const lastInbound = (accountIds: string[] | null) =>
    `(SELECT max(s.last_inbound_at) FROM contact_channel_state s WHERE s.contact_id = c.id${
      accountIds === null ? "" : ` AND s.channel_account_id IN (${list(accountIds)})`
    })`;
  const column = (f: ResolvedField): string => {
    switch (f.kind) {
      case "city":
        return "c.city";
      case "country":
        return "c.country";
      case "createdAt":
        return "c.created_at";
      case "custom":
        return custom(f.key, f.type);
      case "lastInboundAt":
        return lastInbound(f.accountIds);
      default:
        throw new Error(`compileFilter: ${f.kind} has no column`);
    }
  };

  const pred = (n: ResolvedFilter): string => {
    // Cheap tests first: SQLite evaluates a conjunction's terms in the order written and stops at the first
    // false one, so a column comparison spares most rows the index probes of the subqueries after it.
    if ("and" in n) return `(${byCost(n.and).map(pred).join(" AND ")})`;
    if ("or" in n) return `(${byCost(n.or).map(pred).join(" OR ")})`;
    if ("not" in n) return `(NOT ${pred(n.not)})`;
    const f = n.field;
    switch (n.is) {
      case "exists":
        switch (f.kind) {
          case "tag":
            return "EXISTS (SELECT 1 FROM contact_tags ct WHERE ct.contact_id = c.id)";
          case "identity":
            return `EXISTS (SELECT 1 FROM contact_identities i WHERE i.contact_id = c.id AND i.channel = ${param(f.channel)})`;
          case "source":
            return "EXISTS (SELECT 1 FROM contact_sources cs WHERE cs.contact_id = c.id AND cs.source_id IS NOT NULL)";
          case "lastInboundAt":
            return `(${lastInbound(f.accountIds)} IS NOT NULL)`;
          case "custom":
            return pg
              ? `coalesce(json_typeof(c.custom_fields::json -> '${f.key}') <> 'null', FALSE)`
              : `coalesce(json_type(c.custom_fields, '$.${f.key}') <> 'null', FALSE)`;
          default:
            return `(${column(f)} IS NOT NULL)`;
        }
      case "eq-bool":
        if (f.kind === "blocked") return `(c.blocked = ${n.value ? 1 : 0})`;
        if (f.kind === "custom")
          return pg
            ? `coalesce(json_typeof(c.custom_fields::json -> '${f.key}') = 'boolean' AND ${jsonText(engine, "c.custom_fields", [f.key])} = '${n.value}', FALSE)`
            : `coalesce(json_type(c.custom_fields, '$.${f.key}') = '${n.value}', FALSE)`;
        throw new Error(`compileFilter: ${f.kind} is not boolean`);
      case "in": {
        switch (f.kind) {
          case "tag":
            return `EXISTS (SELECT 1 FROM contact_tags ct JOIN tags t ON t.id = ct.tag_id WHERE ct.contact_id = c.id AND t.name IN (${list(n.values)}))`;
          case "source":
            return `EXISTS (SELECT 1 FROM contact_sources cs WHERE cs.contact_id = c.id AND cs.source_id IN (${list(n.values)}))`;
          case "consent": {
            // No row is `unknown`; a row holds opted_in or opted_out.
            const known = n.values.filter((v) => v !== "unknown");
            const parts: string[] = [];
            if (known.length)
              parts.push(
                `EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ${param(f.channel)} AND k.status IN (${list(known)}))`,
              );
            if (known.length < n.values.length)
              parts.push(`NOT EXISTS (SELECT 1 FROM contact_consents k WHERE k.contact_id = c.id AND k.channel = ${param(f.channel)})`);
            return `(${parts.join(" OR ")})`;
          }
          default: {
            const numeric = f.kind === "custom" && f.type === "number";
            if (n.values.length === 1) return safe(`${column(f)} = ${param(n.values[0]!)}`);
            return safe(`${column(f)} IN (${list(n.values, numeric && pg ? "double precision" : undefined)})`);
          }
        }
      }
      case "contains":
        return safe(pg ? `strpos(${column(f)}, ${param(n.value)}) > 0` : `instr(${column(f)}, ${param(n.value)}) > 0`);
      default:
        return safe(`${column(f)} ${n.is} ${param(n.value)}`);
    }
  };

  return { sql: pred(f), params };
}

/** Children cheapest first (stable): the contact's own columns, then its JSON fields, then probes of other tables. */
function byCost(children: ResolvedFilter[]): ResolvedFilter[] {
  return children
    .map((c, i) => ({ c, i, k: cost(c) }))
    .sort((a, b) => a.k - b.k || a.i - b.i)
    .map((x) => x.c);
}
function cost(n: ResolvedFilter): number {
  if ("and" in n) return Math.max(...n.and.map(cost));
  if ("or" in n) return Math.max(...n.or.map(cost));
  if ("not" in n) return cost(n.not);
  switch (n.field.kind) {
    case "city":
    case "country":
    case "blocked":
    case "createdAt":
      return 0;
    case "custom":
      return 1;
    default:
      return 2;
  }
}
