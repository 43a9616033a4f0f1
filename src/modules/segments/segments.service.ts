/**
 * Segments (DESIGN §19): saved contact filters, their contacts and counts, and the count of an unsaved filter.
 * No HTTP. The filter itself — what it may say, how it is checked, compiled and counted — is the contacts
 * module's (contacts.audience.ts, audience-filter.ts): a segment count, a campaign estimate and a campaign's
 * fan-out read one definition of its members.
 */
import type { SegmentsServiceNeeds } from "./segments.needs";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { audienceSize, checkContactFilter, filterContactsPage, type FilterContext } from "../contacts/contacts.audience";
import { accountsOf } from "../channels-api/channel-accounts";
import { segmentsStore, type SegmentRow } from "./segments.repository";

export interface Segment {
  id: string;
  name: string;
  filter: unknown;
  createdAt: string;
  updatedAt: string;
}

const view = (r: SegmentRow): Segment => ({
  id: r.id,
  name: r.name,
  filter: JSON.parse(r.filter),
  createdAt: new Date(r.createdAt).toISOString(),
  updatedAt: new Date(r.updatedAt).toISOString(),
});

/**
 * What a filter is resolved against now: the clock (relative times) and the company's accounts per channel
 * (read before the filter is resolved, which is synchronous; default first, as accountsOf orders them).
 */
export async function filterContextOf(deps: SegmentsServiceNeeds, companyId: string, now = deps.now().getTime()): Promise<FilterContext> {
  const accounts = await accountsOf(deps, companyId);
  return { now, accountsOf: (channel) => accounts.filter((r) => r.account.channel === channel).map((r) => r.account.id) };
}

function checkName(name: string | undefined, p: DetailCollector): string | undefined {
  if (name === undefined) return undefined;
  const trimmed = name.trim();
  if (!trimmed) p.add("/name", "must not be blank");
  return trimmed;
}

async function loadSegment(deps: SegmentsServiceNeeds, companyId: string, id: string): Promise<SegmentRow> {
  const row = await segmentsStore(deps.db).segmentById(companyId, id);
  if (!row) throw notFound("Segment");
  return row;
}

/** The segment's filter checked and resolved now (for its contacts, its count, a campaign). */
async function resolvedFilterOf(deps: SegmentsServiceNeeds, companyId: string, row: SegmentRow, pointer = "/filter") {
  return await checkContactFilter({ db: deps.db, companyId, filter: JSON.parse(row.filter), pointer, context: await filterContextOf(deps, companyId) });
}

export async function createSegment(
  deps: SegmentsServiceNeeds,
  { companyId, input }: { companyId: string; input: { name: string; filter: unknown } },
): Promise<Segment> {
  const p = new DetailCollector();
  const name = checkName(input.name, p)!;
  p.throwIfAny("The segment is not valid");
  await checkContactFilter({ db: deps.db, companyId, filter: input.filter, pointer: "/filter", context: await filterContextOf(deps, companyId) });
  const store = segmentsStore(deps.db);
  return deps.db.unit(async () => {
    if (await store.segmentByName(companyId, name))
      throw new AppError("CONFLICT", `A segment named ${name} exists`, [{ pointer: "/name", message: "already exists" }]);
    const at = deps.now().getTime();
    const row: SegmentRow = { id: newId(), companyId, name, filter: JSON.stringify(input.filter), createdAt: at, updatedAt: at };
    await store.insertSegment(row);
    return view(row);
  });
}

export async function updateSegment(
  deps: SegmentsServiceNeeds,
  { companyId, id, input }: { companyId: string; id: string; input: { name?: string; filter?: unknown } },
): Promise<Segment> {
  const p = new DetailCollector();
  const name = checkName(input.name, p);
  p.throwIfAny("The segment is not valid");
  if (input.filter !== undefined)
    await checkContactFilter({ db: deps.db, companyId, filter: input.filter, pointer: "/filter", context: await filterContextOf(deps, companyId) });
  const store = segmentsStore(deps.db);
  return deps.db.unit(async () => {
    const row = await loadSegment(deps, companyId, id);
    if (name !== undefined && name !== row.name && (await store.segmentByName(companyId, name)))
      throw new AppError("CONFLICT", `A segment named ${name} exists`, [{ pointer: "/name", message: "already exists" }]);
    const next: SegmentRow = {
      ...row,
      name: name ?? row.name,
      filter: input.filter === undefined ? row.filter : JSON.stringify(input.filter),
      updatedAt: deps.now().getTime(),
    };
    await store.rewriteSegment(next);
    return view(next);
  });
}

export async function deleteSegment(deps: SegmentsServiceNeeds, { companyId, id }: { companyId: string; id: string }): Promise<{ id: string; deleted: true }> {
  return deps.db.unit(async () => {
    if (!(await segmentsStore(deps.db).deleteSegment(companyId, id))) throw notFound("Segment");
    return { id, deleted: true as const };
  });
}

export async function getSegment(deps: SegmentsServiceNeeds, { companyId, id }: { companyId: string; id: string }): Promise<Segment> {
  return view(await loadSegment(deps, companyId, id));
}

export async function listSegments(
  deps: SegmentsServiceNeeds,
  { companyId, before, limit }: { companyId: string; before: string | null; limit: number },
): Promise<{ segments: Segment[]; more: boolean }> {
  const rows = await segmentsStore(deps.db).listSegments(companyId, before, limit + 1);
  const more = rows.length > limit;
  return { segments: (more ? rows.slice(0, limit) : rows).map(view), more };
}

/** The segment's contacts now, newest first. */
export async function segmentContacts(
  deps: SegmentsServiceNeeds,
  { companyId, id, before, limit }: { companyId: string; id: string; before: string | null; limit: number },
) {
  const row = await loadSegment(deps, companyId, id);
  const filter = await resolvedFilterOf(deps, companyId, row);
  return filterContactsPage({ db: deps.db, companyId, filter, before, limit });
}

const onFallback = (deps: SegmentsServiceNeeds) => (err: unknown) => deps.log.warn({ err }, "audience count worker unavailable; counting on the event loop");

/** How many contacts meet an unsaved filter now (POST /segments/count). */
export async function countFilter(deps: SegmentsServiceNeeds, { companyId, filter }: { companyId: string; filter: unknown }): Promise<{ count: number }> {
  const resolved = await checkContactFilter({ db: deps.db, companyId, filter, pointer: "/filter", context: await filterContextOf(deps, companyId) });
  return { count: await audienceSize({ db: deps.db, companyId, audience: { type: "filter", filter: resolved }, onFallback: onFallback(deps) }) };
}

/**
 * A segment's filter as the client wrote it, for a campaign audience `{type: "segment", segmentId}` (422 at
 * `pointer` when there is no such segment).
 */
export async function segmentFilterFor(
  deps: SegmentsServiceNeeds,
  { companyId, id, pointer }: { companyId: string; id: string; pointer: string },
): Promise<unknown> {
  const row = await segmentsStore(deps.db).segmentById(companyId, id);
  if (!row) throw new AppError("VALIDATION_FAILED", "No such segment", [{ pointer, message: "no such segment (GET /segments)" }]);
  return JSON.parse(row.filter);
}
