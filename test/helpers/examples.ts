/**
 * "The answer is what the example shows": the same keys at every level (no more, no fewer), the same values —
 * except where the example holds an id or a time, which a fresh appliance makes anew (compared as "some uuid",
 * "some ISO time"). Free-form maps (metadata, customFields, content …) are compared as objects only: their keys
 * are the caller's. `keysOnly`: compare keys and JSON types, not values (an event example against a real event).
 */
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/g;
const FREE_FORM = new Set(["metadata", "customFields", "content", "askValues", "referral", "params", "overrides", "consent"]);

const typeOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
const opaque = (s: string) => s.replace(UUID, "<uuid>").replace(TIME, "<time>");

export function expectSameShape(actual: unknown, example: unknown, path = "$", opts: { keysOnly?: boolean } = {}): void {
  const key = path.split(".").pop()!;
  if (typeOf(example) === "object" && typeOf(actual) === "object") {
    if (FREE_FORM.has(key)) return;
    const a = Object.keys(actual as object).sort();
    const e = Object.keys(example as object).sort();
    if (a.join() !== e.join()) throw new Error(`${path}: keys ${JSON.stringify(a)}, the example shows ${JSON.stringify(e)}`);
    for (const k of e) expectSameShape((actual as Record<string, unknown>)[k], (example as Record<string, unknown>)[k], `${path}.${k}`, opts);
    return;
  }
  if (Array.isArray(example) && Array.isArray(actual)) {
    example.slice(0, actual.length).forEach((x, i) => expectSameShape(actual[i], x, `${path}[${i}]`, opts));
    return;
  }
  if (opts.keysOnly) {
    // A nullable field may be null on one side (an error only on failure, a time not reached yet).
    if (example !== null && actual !== null && typeOf(actual) !== typeOf(example))
      throw new Error(`${path}: ${typeOf(actual)}, the example shows ${typeOf(example)}`);
    return;
  }
  if (typeof example === "string" && typeof actual === "string" && opaque(example) !== example) {
    if (opaque(actual) !== opaque(example)) throw new Error(`${path}: ${JSON.stringify(actual)}, the example shows ${JSON.stringify(example)}`);
    return;
  }
  if (JSON.stringify(actual) !== JSON.stringify(example)) throw new Error(`${path}: ${JSON.stringify(actual)}, the example shows ${JSON.stringify(example)}`);
}

/**
 * A JSON block of the docs, which abbreviates: `{…}` and `, …}` (more keys), `"0193…"` (some value). Parsed
 * into JSON where an abbreviated object carries `"…": true`.
 */
export function parseShown(text: string): unknown {
  const json = text
    .replace(/\{\s*…\s*\}/g, '{"…": true}')
    .replace(/,\s*…\s*\}/g, ', "…": true}')
    .replace(/:\s*…/g, ': "…"')
    .replace(/\(only during a rotation\)/g, "");
  return JSON.parse(json);
}

/**
 * The answer is what the docs show: every key shown is there (exactly the keys, unless the object is
 * abbreviated); a shown string with "…" is any value; `a|b|c` one of them; ids and times any id and time; the
 * rest equal. Free-form maps compare as objects only where they show nothing.
 */
export function expectShown(actual: unknown, shown: unknown, path = "$"): void {
  if (typeof shown === "string" && shown.includes("…")) return;
  if (typeof shown === "string" && /^[a-z_]+(\|[a-z_]+)+$/.test(shown)) {
    if (!shown.split("|").includes(actual as string)) throw new Error(`${path}: ${JSON.stringify(actual)}, the docs show one of ${shown}`);
    return;
  }
  if (typeOf(shown) === "object") {
    if (typeOf(actual) !== "object") throw new Error(`${path}: ${JSON.stringify(actual)}, the docs show an object`);
    const { "…": more, ...keys } = shown as Record<string, unknown>;
    const a = Object.keys(actual as object).sort();
    if (!more && a.join() !== Object.keys(keys).sort().join())
      throw new Error(`${path}: keys ${JSON.stringify(a)}, the docs show ${JSON.stringify(Object.keys(keys).sort())}`);
    for (const [k, v] of Object.entries(keys)) {
      if (!(k in (actual as object))) throw new Error(`${path}.${k}: missing`);
      expectShown((actual as Record<string, unknown>)[k], v, `${path}.${k}`);
    }
    return;
  }
  if (Array.isArray(shown)) {
    if (!Array.isArray(actual) || actual.length < shown.length) throw new Error(`${path}: ${JSON.stringify(actual)}, the docs show ${shown.length} items`);
    shown.forEach((x, i) => expectShown(actual[i], x, `${path}[${i}]`));
    return;
  }
  expectSameShape(actual, shown, path);
}
