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
    if (example !== null && actual !== null && typeOf(actual) !== typeOf(example)) throw new Error(`${path}: ${typeOf(actual)}, the example shows ${typeOf(example)}`);
    return;
  }
  if (typeof example === "string" && typeof actual === "string" && opaque(example) !== example) {
    if (opaque(actual) !== opaque(example)) throw new Error(`${path}: ${JSON.stringify(actual)}, the example shows ${JSON.stringify(example)}`);
    return;
  }
  if (JSON.stringify(actual) !== JSON.stringify(example)) throw new Error(`${path}: ${JSON.stringify(actual)}, the example shows ${JSON.stringify(example)}`);
}
