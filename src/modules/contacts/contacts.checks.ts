/**
 * Input checks of contact writes — pure functions, no database: the API calls them before its transaction,
 * and bulk imports run them in a worker thread (import.worker.ts) so the event loop only does the writes.
 * Every problem is collected with its JSON pointer; `checkUpsert` throws one 422 naming all of them.
 */
import { DetailCollector } from "../../platform/errors";
import type { ContactUpsertInput } from "./contacts.model";
import type { CustomFieldDef } from "./custom-fields.repository";
import { validateCustomFieldValue } from "./custom-fields.service";
import { tryNormaliseIdentity, type NormalisedIdentity } from "./identity";

export interface CheckedIdentity extends NormalisedIdentity {
  channel: string;
  /** Position in the request body (for pointers in CONFLICT details). */
  index: number;
}

/** An upsert body after its checks: names trimmed (blank → null), identities normalised and deduplicated. */
export interface CheckedUpsert {
  firstName?: string | null;
  lastName?: string | null;
  city?: string | null;
  country?: string | null;
  identities: CheckedIdentity[];
  tags?: string[];
  customFields?: Record<string, unknown>;
  optIn?: boolean;
}

/** Trimmed text; blank → null; absent stays absent. */
export const text = (v: string | null | undefined): string | null | undefined => (v === undefined ? undefined : v === null ? null : v.trim() || null);

export function checkIdentities(list: { channel: string; value: string }[], errors: DetailCollector): CheckedIdentity[] {
  const out: CheckedIdentity[] = [];
  const seen = new Set<string>();
  list.forEach((i, index) => {
    const n = tryNormaliseIdentity(i.channel, i.value);
    if ("error" in n) {
      errors.add(`/identities/${index}/${n.field}`, n.error);
      return;
    }
    const k = `${i.channel}\u0000${n.value}`;
    if (seen.has(k)) return; // the same identity twice in one body is the same key
    seen.add(k);
    out.push({ value: n.value, status: n.status, channel: i.channel, index });
  });
  return out;
}

export function checkTags(tags: string[] | undefined, errors: DetailCollector): string[] | undefined {
  if (tags === undefined) return undefined;
  const out = new Set<string>();
  tags.forEach((t, i) => {
    const name = t.trim();
    if (!name) errors.add(`/tags/${i}`, "must not be blank");
    else if (name.length > 100) errors.add(`/tags/${i}`, "must be at most 100 characters");
    else out.add(name);
  });
  return [...out];
}

export function checkCustomFields(
  given: Record<string, unknown> | undefined,
  defs: Map<string, CustomFieldDef>,
  errors: DetailCollector,
): Record<string, unknown> | undefined {
  if (given === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    const pointer = `/customFields/${key.replace(/~/g, "~0").replace(/\//g, "~1")}`;
    const def = defs.get(key);
    if (!def) {
      errors.add(pointer, "unknown custom field (see GET /custom-fields)");
      continue;
    }
    if (value === null) {
      out[key] = null;
      continue;
    }
    const problem = validateCustomFieldValue(def, value);
    if (problem) errors.add(pointer, problem);
    else out[key] = value;
  }
  return out;
}

/** Checks an upsert body (seed rules' input side); throws 422 VALIDATION_FAILED naming every problem. */
export function checkUpsert(input: ContactUpsertInput, defs: Map<string, CustomFieldDef>): CheckedUpsert {
  const errors = new DetailCollector();
  const identities = checkIdentities(input.identities, errors);
  if (!input.identities.length) errors.add("/identities", "at least one identity is required");
  const tags = checkTags(input.tags, errors);
  const customFields = checkCustomFields(input.customFields, defs, errors);
  errors.throwIfAny();
  return {
    firstName: text(input.firstName),
    lastName: text(input.lastName),
    city: text(input.city),
    country: text(input.country),
    identities,
    tags,
    customFields,
    optIn: input.optIn,
  };
}
