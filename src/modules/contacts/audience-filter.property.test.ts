/**
 * Property test of the contact filter (DESIGN §19): for generated contacts — every fact a filter can read,
 * written into the real tables — and generated filter trees, the compiled SQL selects exactly the contacts a
 * brute-force evaluation in JS selects (same ids), counted (the segment count's path) and paged in both orders
 * (the fan-out's and GET /segments/{id}/contacts'). Runs on the engine of SWITCHBOARD_TEST_ENGINE.
 *
 * The JS evaluator below is written from the semantics stated in audience-filter.ts, not from the compiler.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createCompany } from "../companies/companies.service";
import { newId } from "../../platform/ids";
import { FILTER_LIMITS, type FilterNode } from "./audience-filter";
import { audienceSize, checkContactFilter, type FilterContext } from "./contacts.audience";
import { audienceStore } from "./audience.repository";
import { createCustomField } from "./custom-fields.service";

const DAY = 86_400_000;
const BASE = Date.parse("2026-01-01T00:00:00Z");
const NOW = BASE + 60 * DAY;
const ACCOUNTS_OF: Record<string, string[]> = { whatsapp: ["acc-wa-1", "acc-wa-2"], email: ["acc-mail"], telegram: [] };
const ALL_ACCOUNTS = ["acc-wa-1", "acc-wa-2", "acc-mail", "acc-gone"];
const CHANNELS = ["whatsapp", "email", "telegram"] as const;
const CITIES = ["Istanbul", "Ankara", "London", "İzmir"];
const COUNTRIES = ["TR", "GB"];
const TAGS = ["vip", "new", "lead"];
const SOURCES = ["01900000-0000-7000-8000-00000000005a", "01900000-0000-7000-8000-00000000005b"];
const PLANS = ["gold", "silver", "bronze"];
const NOTES = ["call back", "vip customer", "Call"];
const DATES = ["2026-01-10", "2026-02-01", "2026-03-15"];

interface Person {
  id: string;
  deleted: boolean;
  city: string | null;
  country: string | null;
  createdAt: number;
  blocked: boolean;
  tags: string[];
  identities: Partial<Record<string, "verified" | "pending">>;
  consent: Partial<Record<string, "opted_in" | "opted_out">>;
  /** account id → last inbound ms (null: a state row without an inbound time). */
  inbound: Record<string, number | null>;
  /** undefined: no row; null: a row whose source was removed. */
  source: string | null | undefined;
  custom: Record<string, unknown>;
}

const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null });
const subset = <T>(xs: readonly T[]) => fc.subarray([...xs]);
const personArb: fc.Arbitrary<Omit<Person, "id">> = fc.record({
  deleted: fc.boolean().map((b) => b && Math.random() < 0.3),
  city: maybe(fc.constantFrom(...CITIES)),
  country: maybe(fc.constantFrom(...COUNTRIES)),
  createdAt: fc.integer({ min: 0, max: 59 }).map((d) => BASE + d * DAY),
  blocked: fc.boolean(),
  tags: subset(TAGS),
  identities: fc.record(
    Object.fromEntries(CHANNELS.map((c) => [c, fc.constantFrom(undefined, "verified", "pending")])) as Record<
      string,
      fc.Arbitrary<"verified" | "pending" | undefined>
    >,
  ),
  consent: fc.record(
    Object.fromEntries(CHANNELS.map((c) => [c, fc.constantFrom(undefined, "opted_in", "opted_out")])) as Record<
      string,
      fc.Arbitrary<"opted_in" | "opted_out" | undefined>
    >,
  ),
  inbound: fc.dictionary(fc.constantFrom(...ALL_ACCOUNTS), maybe(fc.integer({ min: 0, max: 60 * 24 }).map((h) => BASE + h * 3_600_000))),
  source: fc.constantFrom(undefined, null, ...SOURCES),
  custom: fc.record(
    {
      plan: fc.constantFrom(...PLANS),
      score: fc.oneof(fc.integer({ min: -5, max: 20 }), fc.constantFrom(2.5, 10)),
      vip: fc.boolean(),
      renewal: fc.constantFrom(...DATES),
      note: fc.constantFrom(...NOTES),
    },
    { requiredKeys: [] },
  ),
}) as fc.Arbitrary<Omit<Person, "id">>;

// ---- filters -------------------------------------------------------------------------------------------------
const time = fc.oneof(
  fc.integer({ min: 0, max: 60 * 24 }).map((h) => new Date(BASE + h * 3_600_000).toISOString()),
  fc.integer({ min: 0, max: 70 }).map((d) => `-P${d}D`),
  fc.integer({ min: 0, max: 1500 }).map((h) => `-PT${h}H`),
);
const cmpOp = fc.constantFrom("gt", "gte", "lt", "lte");
const textConds = (field: string, pool: readonly string[], withContains: boolean) =>
  fc.oneof(
    fc.record({ field: fc.constant(field), op: fc.constantFrom("eq", "ne"), value: fc.constantFrom(...pool) }),
    fc.record({ field: fc.constant(field), op: fc.constantFrom("in", "nin"), value: fc.uniqueArray(fc.constantFrom(...pool), { minLength: 1, maxLength: 3 }) }),
    fc.record({ field: fc.constant(field), op: fc.constant("exists"), value: fc.constantFrom(true, false, undefined) }),
    ...(withContains ? [fc.record({ field: fc.constant(field), op: fc.constant("contains"), value: fc.constantFrom("an", "stan", "all", "C", "ll") })] : []),
  );
const condition: fc.Arbitrary<FilterNode> = fc
  .oneof(
    textConds("tag", [...TAGS, "nobody"], false),
    textConds("city", CITIES, true),
    textConds("country", COUNTRIES, true),
    textConds("source", SOURCES, false),
    textConds("customFields.plan", PLANS, true),
    textConds("customFields.note", NOTES, true),
    textConds("customFields.renewal", DATES, false),
    fc.record({ field: fc.constant("customFields.renewal"), op: cmpOp, value: fc.constantFrom(...DATES) }),
    fc.record({ field: fc.constant("customFields.score"), op: fc.constantFrom("eq", "ne"), value: fc.constantFrom(2.5, 3, 10) }),
    fc.record({
      field: fc.constant("customFields.score"),
      op: fc.constantFrom("in", "nin"),
      value: fc.uniqueArray(fc.constantFrom(2.5, 3, 10, -1), { minLength: 1, maxLength: 3 }),
    }),
    fc.record({ field: fc.constant("customFields.score"), op: cmpOp, value: fc.integer({ min: -6, max: 21 }) }),
    fc.record({ field: fc.constant("customFields.score"), op: fc.constant("exists") }),
    fc.record({ field: fc.constant("customFields.vip"), op: fc.constantFrom("eq", "ne"), value: fc.boolean() }),
    fc.record({ field: fc.constant("customFields.vip"), op: fc.constant("exists"), value: fc.boolean() }),
    fc.record({
      field: fc.constantFrom(...CHANNELS.map((c) => `consent.${c}`)),
      op: fc.constantFrom("eq", "ne"),
      value: fc.constantFrom("opted_in", "opted_out", "unknown"),
    }),
    fc.record({
      field: fc.constantFrom(...CHANNELS.map((c) => `consent.${c}`)),
      op: fc.constantFrom("in", "nin"),
      value: fc.uniqueArray(fc.constantFrom("opted_in", "opted_out", "unknown"), { minLength: 1, maxLength: 3 }),
    }),
    fc.record({ field: fc.constantFrom(...CHANNELS.map((c) => `identity.${c}`)), op: fc.constant("exists"), value: fc.constantFrom(true, false, undefined) }),
    fc.record({ field: fc.constant("createdAt"), op: cmpOp, value: time }),
    fc.record({ field: fc.constantFrom("lastInboundAt", ...CHANNELS.map((c) => `lastInboundAt.${c}`)), op: cmpOp, value: time }),
    fc.record({
      field: fc.constantFrom("lastInboundAt", ...CHANNELS.map((c) => `lastInboundAt.${c}`)),
      op: fc.constant("exists"),
      value: fc.constantFrom(true, false),
    }),
    fc.record({ field: fc.constant("blocked"), op: fc.constantFrom("eq", "ne"), value: fc.boolean() }),
  )
  .map((c) => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)) as FilterNode);

const filterArb: fc.Arbitrary<FilterNode> = fc
  .letrec<{ node: FilterNode }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      condition,
      fc.record({ all: fc.array(tie("node"), { minLength: 1, maxLength: 3 }) }),
      fc.record({ any: fc.array(tie("node"), { minLength: 1, maxLength: 3 }) }),
      fc.record({ not: tie("node") }),
    ),
  }))
  .node.filter((f) => size(f).nodes <= FILTER_LIMITS.maxNodes && size(f).depth <= FILTER_LIMITS.maxDepth); // larger trees are 422s (audience-filter.test.ts)

function size(f: FilterNode): { nodes: number; depth: number } {
  const kids = "all" in f ? f.all : "any" in f ? f.any : "not" in f ? [f.not] : [];
  const sub = kids.map(size);
  return { nodes: 1 + sub.reduce((a, b) => a + b.nodes, 0), depth: kids.length ? 1 + Math.max(...sub.map((s) => s.depth)) : 0 };
}

// ---- the brute force -----------------------------------------------------------------------------------------
function timeValue(v: string): number {
  const m = /^-P(?:(\d+)D|T(\d+)H)$/.exec(v);
  if (!m) return Date.parse(v);
  return NOW - (m[1] ? Number(m[1]) * DAY : Number(m[2]) * 3_600_000);
}
function compare(a: number | string | undefined | null, op: string, b: number | string): boolean {
  if (a === undefined || a === null) return false;
  return op === "gt" ? a > b : op === "gte" ? a >= b : op === "lt" ? a < b : a <= b;
}
/** What a field reads of a person: its values (a contact has several tags), or undefined when it has none. */
function factOf(p: Person, field: string): unknown {
  const [head, rest] = [field.split(".")[0]!, field.split(".").slice(1).join(".")];
  switch (head) {
    case "city":
      return p.city ?? undefined;
    case "country":
      return p.country ?? undefined;
    case "source":
      return p.source ?? undefined;
    case "blocked":
      return p.blocked;
    case "createdAt":
      return p.createdAt;
    case "customFields":
      return p.custom[rest];
    case "consent":
      return p.consent[rest] ?? "unknown";
    case "lastInboundAt": {
      const accounts = rest ? ACCOUNTS_OF[rest]! : ALL_ACCOUNTS;
      const times = accounts.map((a) => p.inbound[a]).filter((t): t is number => typeof t === "number");
      return times.length ? Math.max(...times) : undefined;
    }
  }
  throw new Error(field);
}
function evaluate(p: Person, f: FilterNode): boolean {
  if ("all" in f) return f.all.every((c) => evaluate(p, c));
  if ("any" in f) return f.any.some((c) => evaluate(p, c));
  if ("not" in f) return !evaluate(p, f.not);
  const { field, op, value } = f as { field: string; op: string; value?: any };
  if (op === "ne") return !evaluate(p, { field, op: "eq", value });
  if (op === "nin") return !evaluate(p, { field, op: "in", value });
  if (op === "exists" && value === false) return !evaluate(p, { field, op: "exists" });
  if (field === "tag") {
    if (op === "exists") return p.tags.length > 0;
    const names: string[] = op === "eq" ? [value] : value;
    return p.tags.some((t) => names.includes(t));
  }
  if (field.startsWith("identity.")) return p.identities[field.slice(9)] !== undefined;
  const fact = factOf(p, field);
  switch (op) {
    case "exists":
      return fact !== undefined;
    case "eq":
      return fact === value;
    case "in":
      return (value as unknown[]).includes(fact);
    case "contains":
      return typeof fact === "string" && fact.includes(value);
    default:
      return compare(fact as number, op, field === "createdAt" || field.startsWith("lastInboundAt") ? timeValue(value) : value);
  }
}

// ---- the population in the real tables -----------------------------------------------------------------------
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

let companies = 0;
async function population(people: Omit<Person, "id">[]): Promise<{ companyId: string; people: Person[] }> {
  const db = app.deps.db;
  const { company } = await createCompany({ db, now: app.deps.now, slug: `filter-${++companies}`, name: "Filter" });
  const companyId = company.id;
  for (const [key, type, options] of [
    ["plan", "select", PLANS],
    ["score", "number"],
    ["vip", "boolean"],
    ["renewal", "date"],
    ["note", "text"],
  ] as const)
    await createCustomField({ db, now: app.deps.now, companyId, input: { key, label: key, type, ...(options ? { options: [...options] } : {}) } });
  const tagIds = Object.fromEntries(TAGS.map((t) => [t, newId()]));
  await db.unit(async () => {
    for (const t of TAGS) await db.sql(`INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, ?)`).run(tagIds[t]!, companyId, t, BASE);
  });
  const out: Person[] = people.map((p) => ({ ...p, id: newId() }));
  await db.unit(async () => {
    for (const p of out) {
      await db
        .sql(
          `INSERT INTO contacts (id, company_id, city, country, custom_fields, blocked, created_at, updated_at, deleted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(p.id, companyId, p.city, p.country, JSON.stringify(p.custom), p.blocked ? 1 : 0, p.createdAt, p.createdAt, p.deleted ? NOW : null);
      for (const t of p.tags) await db.sql(`INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, ?)`).run(p.id, tagIds[t]!, BASE);
      for (const [channel, status] of Object.entries(p.identities))
        if (status)
          await db
            .sql(`INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, ?, ?, ?, ?)`)
            .run(companyId, p.id, channel, `${channel}-${p.id}`, status, BASE);
      for (const [channel, status] of Object.entries(p.consent))
        if (status)
          await db
            .sql(`INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES (?, ?, ?, ?, 'api', ?)`)
            .run(p.id, channel, companyId, status, BASE);
      for (const [account, at] of Object.entries(p.inbound))
        await db
          .sql(`INSERT INTO contact_channel_state (contact_id, channel_account_id, company_id, last_inbound_at, updated_at) VALUES (?, ?, ?, ?, ?)`)
          .run(p.id, account, companyId, at, BASE);
      if (p.source !== undefined)
        await db
          .sql(`INSERT INTO contact_sources (contact_id, company_id, source_id, via, attributed_at, updated_at) VALUES (?, ?, ?, 'manual', ?, ?)`)
          .run(p.id, companyId, p.source, BASE, BASE);
    }
  });
  return { companyId, people: out };
}

const context: FilterContext = { now: NOW, accountsOf: (channel) => ACCOUNTS_OF[channel] ?? [] };

test("property: the compiled filter selects the same contacts as a brute-force evaluation (count, id order, newest first)", async () => {
  let nonEmpty = 0;
  let notAll = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(personArb, { minLength: 5, maxLength: 30 }), fc.array(filterArb, { minLength: 8, maxLength: 12 }), async (people, filters) => {
      const { companyId, people: stored } = await population(people);
      const db = app.deps.db;
      const live = stored.filter((p) => !p.deleted);
      for (const filter of filters) {
        const expected = live
          .filter((p) => evaluate(p, filter))
          .map((p) => p.id)
          .sort();
        let resolved: Awaited<ReturnType<typeof checkContactFilter>>;
        try {
          resolved = await checkContactFilter({ db, companyId, filter, pointer: "/filter", context });
        } catch (e) {
          throw new Error(`${JSON.stringify(filter)}: ${JSON.stringify((e as { details?: unknown }).details)}`);
        }
        const ids = await audienceStore(db).filteredIds(companyId, resolved, "", 1000, "asc");
        expect({ filter, ids }).toEqual({ filter, ids: expected });
        expect(await audienceStore(db).filteredIds(companyId, resolved, null, 1000, "desc")).toEqual([...expected].reverse());
        expect(await audienceSize({ db, companyId, audience: { type: "filter", filter: resolved } })).toBe(expected.length);
        if (expected.length) nonEmpty++;
        if (expected.length < live.length) notAll++;
      }
    }),
    { numRuns: process.env.SWITCHBOARD_TEST_ENGINE === "postgres" ? 8 : 15, endOnFailure: true },
  );
  // The generators reach both sides: filters that select some and filters that leave some out.
  expect(nonEmpty).toBeGreaterThan(20);
  expect(notAll).toBeGreaterThan(20);
}, 120_000);
