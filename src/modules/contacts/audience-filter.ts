/**
 * The contact filter of segments and of `filter`/`segment` campaign audiences (DESIGN §19): a tree of
 * `{all: [F…]}`, `{any: [F…]}`, `{not: F}` and conditions `{field, op, value?}`. This file checks a tree a
 * client sent (422 with a JSON pointer to the offending node) and turns it into predicates with concrete
 * values (`resolveFilter`: relative times against a given now, a channel's accounts). No SQL: the store
 * compiles predicates into one condition over `contacts c` (audience-filter.repository.ts).
 *
 * Semantics (the property test checks them against a brute-force evaluation on both engines):
 * - `ne` is `not eq` and `nin` is `not in`, `exists` with `value: false` is `not exists`: a contact whose
 *   city is unknown matches `city ne "Istanbul"`. Every condition is true or false, never unknown, so `not`
 *   is the complement.
 * - Text compares exactly (case-sensitive); `contains` is a case-sensitive substring — the same on both engines
 *   (their case folding differs outside ASCII).
 * - Times (`createdAt`, `lastInboundAt…`) take an RFC 3339 date-time or a duration before now, `-P30D`,
 *   `-PT12H`, `-PT90M`, evaluated when the filter is counted or resolved (so a saved segment stays "last 30 days").
 * - `lastInboundAt` is the provider time of the contact's last inbound message on any channel account;
 *   `lastInboundAt.<channel>` the same over the company's accounts of that channel (contact_channel_state is kept
 *   per account, not per channel). A contact that never wrote matches no comparison (only `exists: false`).
 * - `tag` takes tag names: `eq` has that tag, `in` has one of them, `exists` has any tag.
 * - `customFields.<key>` needs a defined field; its type (text, select, number, boolean, date) decides ops and value.
 * - `source` takes source ids (a contact's first-touch source, DESIGN §13).
 */
import { CHANNELS } from "../../channels/channel.types";
import { DetailCollector } from "../../platform/errors";

/** A filter as clients write it. */
export type FilterNode = { all: FilterNode[] } | { any: FilterNode[] } | { not: FilterNode } | FilterCondition;
export interface FilterCondition {
  field: string;
  op: FilterOp;
  value?: unknown;
}

export const FILTER_OPS = ["eq", "ne", "in", "nin", "contains", "gt", "gte", "lt", "lte", "exists"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** Bounds of one filter (a count compiles it into one statement: its size is the statement's). */
export const FILTER_LIMITS = { maxDepth: 6, maxNodes: 50, maxValues: 100, maxText: 200 } as const;

/** What a condition is about, checked. */
export type FilterField =
  | { kind: "tag" }
  | { kind: "custom"; key: string; type: "text" | "select" | "number" | "boolean" | "date" }
  | { kind: "consent"; channel: string }
  | { kind: "identity"; channel: string }
  | { kind: "createdAt" }
  | { kind: "lastInboundAt"; channel: string | null }
  | { kind: "source" }
  | { kind: "city" }
  | { kind: "country" }
  | { kind: "blocked" };

type ValueType = "text" | "number" | "boolean" | "date" | "time" | "consent";

/** A checked filter: positive predicates under and/or/not (`ne`, `nin` and `exists: false` became `not`). */
export type CheckedFilter =
  | { and: CheckedFilter[] }
  | { or: CheckedFilter[] }
  | { not: CheckedFilter }
  | { field: FilterField; is: "in"; values: (string | number)[] }
  | { field: FilterField; is: "eq-bool"; value: boolean }
  | { field: FilterField; is: "contains"; value: string }
  | { field: FilterField; is: ">" | ">=" | "<" | "<="; value: string | number }
  | { field: FilterField; is: "exists" };

/** A predicate with concrete values: times in ms, a channel's `lastInboundAt` as its account ids. */
export type ResolvedFilter =
  | { and: ResolvedFilter[] }
  | { or: ResolvedFilter[] }
  | { not: ResolvedFilter }
  | { field: ResolvedField; is: "in"; values: (string | number)[] }
  | { field: ResolvedField; is: "eq-bool"; value: boolean }
  | { field: ResolvedField; is: "contains"; value: string }
  | { field: ResolvedField; is: ">" | ">=" | "<" | "<="; value: string | number }
  | { field: ResolvedField; is: "exists" };
export type ResolvedField = Exclude<FilterField, { kind: "lastInboundAt" }> | { kind: "lastInboundAt"; accountIds: string[] | null };

const CONSENT_VALUES = ["opted_in", "opted_out", "unknown"];
const CMP = { gt: ">", gte: ">=", lt: "<", lte: "<=" } as const;

/** The ops and value type of a field. */
function opsOf(f: FilterField): { ops: readonly FilterOp[]; type: ValueType } {
  switch (f.kind) {
    case "tag":
    case "source":
      return { ops: ["eq", "ne", "in", "nin", "exists"], type: "text" };
    case "city":
    case "country":
      return { ops: ["eq", "ne", "in", "nin", "contains", "exists"], type: "text" };
    case "consent":
      return { ops: ["eq", "ne", "in", "nin"], type: "consent" };
    case "identity":
      return { ops: ["exists"], type: "boolean" };
    case "createdAt":
      return { ops: ["gt", "gte", "lt", "lte"], type: "time" };
    case "lastInboundAt":
      return { ops: ["gt", "gte", "lt", "lte", "exists"], type: "time" };
    case "blocked":
      return { ops: ["eq", "ne"], type: "boolean" };
    case "custom":
      switch (f.type) {
        case "text":
        case "select":
          return { ops: ["eq", "ne", "in", "nin", "contains", "exists"], type: "text" };
        case "number":
          return { ops: ["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "exists"], type: "number" };
        case "date":
          return { ops: ["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "exists"], type: "date" };
        case "boolean":
          return { ops: ["eq", "ne", "exists"], type: "boolean" };
      }
  }
}

const FIELD_NAMES =
  "tag, customFields.<key>, consent.<channel>, identity.<channel>, createdAt, lastInboundAt, lastInboundAt.<channel>, source, city, country, blocked";

function parseField(name: string, customFields: ReadonlyMap<string, string>): FilterField | string {
  const dot = name.indexOf(".");
  const head = dot < 0 ? name : name.slice(0, dot);
  const rest = dot < 0 ? null : name.slice(dot + 1);
  const channel = (what: string): string | null => {
    if (rest === null || !(CHANNELS as readonly string[]).includes(rest)) return `${what}.<channel> names one of ${CHANNELS.join(", ")}`;
    return null;
  };
  switch (head) {
    case "tag":
    case "createdAt":
    case "source":
    case "city":
    case "country":
    case "blocked":
      return rest === null ? { kind: head } : `unknown field (fields: ${FIELD_NAMES})`;
    case "consent":
    case "identity":
      return channel(head) ?? { kind: head, channel: rest! };
    case "lastInboundAt":
      if (rest === null) return { kind: "lastInboundAt", channel: null };
      return channel(head) ?? { kind: "lastInboundAt", channel: rest };
    case "customFields": {
      const type = rest === null ? undefined : customFields.get(rest);
      if (!type) return rest ? `no custom field "${rest}" (GET /custom-fields)` : "customFields.<key> names a custom field";
      return { kind: "custom", key: rest!, type: type as "text" };
    }
    default:
      return `unknown field (fields: ${FIELD_NAMES})`;
  }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;
const RELATIVE = /^-P(?:(\d{1,5})D|T(\d{1,6})H|T(\d{1,8})M)$/;

/** A time value: ms since the epoch, or a duration before now (`{ago}` ms). Null: not a time. */
function parseTime(v: unknown): { at: number } | { ago: number } | null {
  if (typeof v !== "string") return null;
  const rel = RELATIVE.exec(v);
  if (rel) return { ago: rel[1] ? Number(rel[1]) * 86_400_000 : rel[2] ? Number(rel[2]) * 3_600_000 : Number(rel[3]) * 60_000 };
  if (!DATE_TIME.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : { at };
}

/** Why `v` is not a value of `type`, or null. */
function valueProblem(type: ValueType, v: unknown): string | null {
  switch (type) {
    case "text":
      return typeof v === "string" && v.length >= 1 && v.length <= FILTER_LIMITS.maxText ? null : `must be a string of 1-${FILTER_LIMITS.maxText} characters`;
    case "number":
      return typeof v === "number" && Number.isFinite(v) ? null : "must be a number";
    case "boolean":
      return typeof v === "boolean" ? null : "must be true or false";
    case "date": {
      if (typeof v !== "string" || !DATE.test(v)) return "must be a date YYYY-MM-DD";
      return new Date(`${v}T00:00:00Z`).toISOString().startsWith(v) ? null : "must be a valid calendar date YYYY-MM-DD";
    }
    case "time":
      return parseTime(v) ? null : 'must be an RFC 3339 date-time or a duration before now ("-P30D", "-PT12H", "-PT90M")';
    case "consent":
      return typeof v === "string" && CONSENT_VALUES.includes(v) ? null : `must be one of ${CONSENT_VALUES.join(", ")}`;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Checks a filter as a client sent it. Every problem is a detail with the JSON pointer of the node
 * (`/filter/all/2/value`); throws 422 VALIDATION_FAILED with all of them. `customFields`: the company's
 * custom field definitions, key → type.
 */
export function checkFilter(raw: unknown, pointer: string, customFields: ReadonlyMap<string, string>): CheckedFilter {
  const p = new DetailCollector();
  let nodes = 0;
  const walk = (n: unknown, at: string, depth: number): CheckedFilter | null => {
    nodes++;
    if (nodes === FILTER_LIMITS.maxNodes + 1) p.add(at, `a filter has at most ${FILTER_LIMITS.maxNodes} nodes`);
    if (nodes > FILTER_LIMITS.maxNodes) return null;
    if (n === undefined) {
      p.add(at, "required");
      return null;
    }
    if (!isObject(n)) {
      p.add(at, "must be an object: {all: [...]}, {any: [...]}, {not: {...}} or a condition {field, op, value}");
      return null;
    }
    const keys = Object.keys(n);
    const group = keys.find((k) => k === "all" || k === "any" || k === "not");
    if (group) {
      for (const k of keys) if (k !== group) p.add(`${at}/${k}`, `not allowed beside "${group}" (one group per node)`);
      if (depth >= FILTER_LIMITS.maxDepth) {
        p.add(at, `groups nest at most ${FILTER_LIMITS.maxDepth} deep`);
        return null;
      }
      if (group === "not") {
        const child = walk(n.not, `${at}/not`, depth + 1);
        return child && { not: child };
      }
      const list = n[group];
      if (!Array.isArray(list) || list.length < 1) {
        p.add(`${at}/${group}`, "must be an array of at least one filter");
        return null;
      }
      const children = list.map((c, i) => walk(c, `${at}/${group}/${i}`, depth + 1));
      if (children.some((c) => c === null)) return null;
      return group === "all" ? { and: children as CheckedFilter[] } : { or: children as CheckedFilter[] };
    }
    return condition(n, at);
  };

  const condition = (n: Record<string, unknown>, at: string): CheckedFilter | null => {
    for (const k of Object.keys(n))
      if (k !== "field" && k !== "op" && k !== "value") p.add(`${at}/${k}`, "unknown property (a condition is {field, op, value})");
    if (typeof n.field !== "string") {
      p.add(`${at}/field`, `required: one of ${FIELD_NAMES}`);
      return null;
    }
    const field = parseField(n.field, customFields);
    if (typeof field === "string") {
      p.add(`${at}/field`, field);
      return null;
    }
    const { ops, type } = opsOf(field);
    const op = n.op as FilterOp;
    if (typeof n.op !== "string" || !ops.includes(op)) {
      p.add(`${at}/op`, `${n.field} takes ${ops.join(", ")}`);
      return null;
    }
    const v = n.value;
    if (op === "exists") {
      if (v !== undefined && typeof v !== "boolean") {
        p.add(`${at}/value`, "exists takes true (the default) or false");
        return null;
      }
      const pred: CheckedFilter = { field, is: "exists" };
      return v === false ? { not: pred } : pred;
    }
    if (v === undefined) {
      p.add(`${at}/value`, `required for ${op}`);
      return null;
    }
    if (op === "in" || op === "nin") {
      if (!Array.isArray(v) || v.length < 1 || v.length > FILTER_LIMITS.maxValues) {
        p.add(`${at}/value`, `${op} takes an array of 1-${FILTER_LIMITS.maxValues} values`);
        return null;
      }
      let ok = true;
      v.forEach((x, i) => {
        const problem = valueProblem(type, x);
        if (problem) {
          p.add(`${at}/value/${i}`, problem);
          ok = false;
        }
      });
      if (!ok) return null;
      const pred: CheckedFilter = { field, is: "in", values: [...new Set(v as (string | number)[])] };
      return op === "nin" ? { not: pred } : pred;
    }
    const problem = valueProblem(type, v);
    if (problem) {
      p.add(`${at}/value`, problem);
      return null;
    }
    if (op === "contains") return { field, is: "contains", value: v as string };
    if (op === "eq" || op === "ne") {
      const pred: CheckedFilter = type === "boolean" ? { field, is: "eq-bool", value: v as boolean } : { field, is: "in", values: [v as string | number] };
      return op === "ne" ? { not: pred } : pred;
    }
    return { field, is: CMP[op as keyof typeof CMP], value: v as string | number };
  };

  const checked = walk(raw, pointer, 0);
  p.throwIfAny("The filter is not valid");
  return checked!;
}

/**
 * A checked filter with concrete values: relative times against `now` (ms), the accounts of a channel for
 * `lastInboundAt.<channel>`.
 */
export function resolveFilter(f: CheckedFilter, ctx: { now: number; accountsOf: (channel: string) => string[] }): ResolvedFilter {
  if ("and" in f) return { and: f.and.map((c) => resolveFilter(c, ctx)) };
  if ("or" in f) return { or: f.or.map((c) => resolveFilter(c, ctx)) };
  if ("not" in f) return { not: resolveFilter(f.not, ctx) };
  const field: ResolvedField =
    f.field.kind === "lastInboundAt" ? { kind: "lastInboundAt", accountIds: f.field.channel === null ? null : ctx.accountsOf(f.field.channel) } : f.field;
  if (f.is === ">" || f.is === ">=" || f.is === "<" || f.is === "<=") {
    if (f.field.kind === "createdAt" || f.field.kind === "lastInboundAt") {
      const t = parseTime(f.value)!;
      return { field, is: f.is, value: "at" in t ? t.at : ctx.now - t.ago };
    }
    return { field, is: f.is, value: f.value };
  }
  return { ...f, field } as ResolvedFilter;
}
