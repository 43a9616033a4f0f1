/**
 * DESIGN §23: a signed delivery with one bad entry stores the good ones. Providers batch (a WhatsApp
 * delivery holds several messages and statuses; a Meta one several entries), and a signature proves who sent
 * the batch, not that every entry is well formed: a field of the wrong type must cost that entry, logged, never
 * the whole delivery — a 4xx/5xx makes the provider redeliver the same batch for days, and drop it in the end.
 */
import type { AdapterContext, InboundEvent } from "./channel.types";

/**
 * Events of every item of `items` (a non-array counts as no items); an item whose parse throws is logged
 * and skipped.
 */
export function eventsOfEach<T>(
  items: unknown,
  { log, what }: { log: AdapterContext["log"]; what: string },
  parse: (item: T) => InboundEvent[],
): InboundEvent[] {
  if (!Array.isArray(items)) return [];
  const events: InboundEvent[] = [];
  items.forEach((item, index) => {
    try {
      events.push(...parse(item as T));
    } catch (error) {
      log.warn({ err: error, index }, `${what}: a malformed entry skipped, the rest of the delivery kept`);
    }
  });
  return events;
}

/** A string of digits (a WhatsApp id, an X user id), else undefined. */
export const digits = (v: unknown): string | undefined => (typeof v === "string" && /^\d{1,20}$/.test(v) ? v : undefined);

/** A non-empty string, else undefined. */
export const text = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** The time of epoch milliseconds given as a number or a string of digits; throws for anything else. */
export function epochMs(v: unknown): Date {
  const at = new Date(typeof v === "string" && v.trim() !== "" ? Number(v) : typeof v === "number" ? v : NaN);
  if (Number.isNaN(at.getTime())) throw new Error("the timestamp is not a time");
  return at;
}
