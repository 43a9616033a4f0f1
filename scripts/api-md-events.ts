/**
 * The event catalogue of docs/api.md ("Event types", from the first `#### ` to the end of the webhooks section),
 * written from src/events.ts — the same examples the OpenAPI document's `webhooks` section
 * shows and the tests check against real events. `bun scripts/api-md-events.ts` rewrites it; a test fails
 * while docs/api.md differs (src/platform/http/docs-examples.test.ts).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EVENT_TYPES } from "../src/events";

export const API_MD = join(import.meta.dir, "../docs/api.md");
const START = "\n#### `";
const END = "<!-- /section:webhooks -->";

export function eventTypesMarkdown(): string {
  return EVENT_TYPES.map(
    (e) =>
      `#### \`${e.name}\`\n\n${e.description}\n\n\`\`\`json\n${JSON.stringify({ type: e.name, timestamp: "2025-06-01T10:00:02.000Z", data: e.example }, null, 2)}\n\`\`\`\n`,
  ).join("\n");
}

/** docs/api.md's text with the catalogue replaced by `eventTypesMarkdown()`. */
export function withEventTypes(md: string): string {
  const start = md.indexOf(START, md.indexOf("### Event types")) + 1;
  const end = md.indexOf(END, start);
  if (start <= 0 || end < 0) throw new Error("docs/api.md: the event catalogue's bounds are gone");
  return md.slice(0, start) + eventTypesMarkdown() + md.slice(end);
}

if (import.meta.main) writeFileSync(API_MD, withEventTypes(readFileSync(API_MD, "utf8")));
