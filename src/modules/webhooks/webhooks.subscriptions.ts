/**
 * Event subscriptions: an endpoint lists event type names (`message.sent`) and `prefix.*` patterns
 * (`message.*`), or `*` for every type. Each entry is checked against the event catalogue, so a typo fails
 * with 422 at creation instead of silently never matching.
 */
import { EVENT_TYPES, isEventType } from "../../events";
import type { DetailCollector } from "../../platform/errors";

const PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?$|^\*$/;

/** Problems with one subscription entry, or null when it is valid. */
export function subscriptionProblem(entry: string): string | null {
  if (!PATTERN.test(entry)) return "must be an event type (message.sent), a prefix pattern (message.*) or *";
  if (entry === "*") return null;
  if (entry.endsWith(".*")) {
    const prefix = entry.slice(0, -1); // keeps the dot
    return EVENT_TYPES.some((e) => e.name.startsWith(prefix)) ? null : `no event type matches ${entry}; see GET /webhooks/event-types`;
  }
  return isEventType(entry) ? null : `unknown event type ${entry}; see GET /webhooks/event-types`;
}

/** Validates and de-duplicates (order kept). Pointers are `${pointer}/<index>`. */
export function validateSubscriptions(entries: string[], pointer: string, details: DetailCollector): string[] {
  entries.forEach((entry, i) => {
    const problem = subscriptionProblem(entry);
    if (problem) details.add(`${pointer}/${i}`, problem);
  });
  return [...new Set(entries)];
}

/** A compiled matcher for a list of entries. */
export function compileMatcher(entries: readonly string[]): (type: string) => boolean {
  if (entries.includes("*")) return () => true;
  const exact = new Set<string>();
  const prefixes: string[] = [];
  for (const e of entries) {
    if (e.endsWith(".*")) prefixes.push(e.slice(0, -1));
    else exact.add(e);
  }
  return (type) => exact.has(type) || prefixes.some((p) => type.startsWith(p));
}
