/**
 * `askValues`: template param → text with optional contact references, each with an optional fallback:
 *   "Sale"                                   literal
 *   "{{contact.firstName | \"friend\"}}"      the contact's first name, or "friend" when it has none
 *   "Hi {{contact.firstName}}, {{contact.customFields.plan | \"your plan\"}} ends soon"
 * Fields: firstName, lastName, city, country, customFields.<key>. A reference without a fallback to a value
 * the contact lacks renders nothing, and the recipient fails with PARAM_MISSING (an empty template param
 * would be refused by the provider, and charged).
 */
import type { DetailCollector } from "../../platform/errors";

const REF = /\{\{\s*contact\.([A-Za-z0-9_.]+)\s*(?:\|\s*"((?:[^"\\]|\\.)*)"\s*)?\}\}/g;
const FIELDS = new Set(["firstName", "lastName", "city", "country"]);

export interface ContactValues {
  firstName: string | null;
  lastName: string | null;
  city: string | null;
  country: string | null;
  /** JSON text of the custom fields (parsed on first use). */
  customFields: string;
}

/** Every problem of the askValues against the template's params (422 pointers into /askValues). */
export function checkAskValues(askValues: Record<string, string>, params: string[], p: DetailCollector): void {
  for (const key of params) if (!(key in askValues)) p.add(`/askValues/${key}`, "required by the template");
  for (const [key, value] of Object.entries(askValues)) {
    if (!params.includes(key)) p.add(`/askValues/${key}`, `the template takes ${params.join(", ") || "no params"}`);
    for (const m of value.matchAll(REF)) {
      const path = m[1]!;
      if (!FIELDS.has(path) && !/^customFields\.[A-Za-z0-9_]+$/.test(path))
        p.add(`/askValues/${key}`, `unknown reference contact.${path} (use firstName, lastName, city, country or customFields.<key>)`);
    }
    if (/\{\{(?!\s*contact\.)/.test(value.replace(REF, "")))
      p.add(`/askValues/${key}`, 'malformed reference: write {{contact.<field>}} or {{contact.<field> | "fallback"}}');
  }
}

/** The params for one contact; `missing` names the first reference with neither a value nor a fallback. */
export function renderAskValues(askValues: Record<string, string>, c: ContactValues): { params: Record<string, string>; missing?: string } {
  let custom: Record<string, unknown> | undefined;
  let missing: string | undefined;
  const params: Record<string, string> = {};
  for (const [key, value] of Object.entries(askValues)) {
    params[key] = value.replace(REF, (_, path: string, fallback: string | undefined) => {
      let v: unknown;
      if (path.startsWith("customFields.")) v = (custom ??= safeParse(c.customFields))[path.slice("customFields.".length)];
      else v = c[path as "firstName"];
      const text = v === null || v === undefined || v === "" ? undefined : String(v);
      if (text !== undefined) return text;
      if (fallback !== undefined) return fallback.replace(/\\(.)/g, "$1");
      missing ??= `contact.${path}`;
      return "";
    });
  }
  return { params, missing };
}

function safeParse(json: string): Record<string, unknown> {
  try {
    return JSON.parse(json) as Record<string, unknown>;
  } catch {
    return {};
  }
}
