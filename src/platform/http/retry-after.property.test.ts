/** Property tests (fast-check) of the Retry-After parsers, beside the examples in webhooks.unit.test.ts and the adapters' tests. */
import { expect, test } from "bun:test";
import fc from "fast-check";
import { parseRetryAfter as webhookRetryAfter } from "../../modules/webhooks/webhooks.delivery";
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from "./retry-after";

const now = new Date("2026-06-01T10:00:00Z");
/** Any text a peer could send, plus the shapes that reach the digit and the date branches. */
const headerText = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.stringMatching(/^\s*\d{1,400}\s*$/),
  fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
);

test("property: any header → undefined or a whole number of ms in [0, MAX_RETRY_AFTER_MS]; a retry time built from it is a valid date", () => {
  fc.assert(
    fc.property(headerText, fc.date({ min: new Date("1970-01-01"), max: new Date("2200-01-01"), noInvalidDate: true }), (header, at) => {
      const ms = parseRetryAfter({ header, now: at });
      if (ms === undefined) return;
      expect(Number.isInteger(ms)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(MAX_RETRY_AFTER_MS);
      expect(Number.isNaN(new Date(at.getTime() + ms).getTime())).toBe(false);
    }),
    { numRuns: 2000 },
  );
});

test("property: delta seconds within the bound are read exactly (surrounding whitespace ignored)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: MAX_RETRY_AFTER_MS / 1000 }), fc.constantFrom("", " ", "\t"), (s, pad) => {
      expect(parseRetryAfter({ header: `${pad}${s}${pad}`, now })).toBe(s * 1000);
    }),
  );
});

test("property: an HTTP date d in the window reads back as d - now (to the second the format keeps)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: MAX_RETRY_AFTER_MS }), (ahead) => {
      const at = new Date(now.getTime() + ahead);
      const ms = parseRetryAfter({ header: at.toUTCString(), now })!;
      expect(ahead - ms).toBeGreaterThanOrEqual(0);
      expect(ahead - ms).toBeLessThan(1000);
    }),
  );
});

test("property: a date in the past is 0, never negative", () => {
  fc.assert(
    fc.property(fc.date({ min: new Date("1900-01-01"), max: now, noInvalidDate: true }), (d) => {
      expect(parseRetryAfter({ header: d.toUTCString(), now })).toBe(0);
    }),
  );
});

test("property: the webhook delivery's parser is null or in [0, 24 h] for any header", () => {
  fc.assert(
    fc.property(fc.option(headerText, { nil: null }), (header) => {
      const ms = webhookRetryAfter(header, now);
      if (ms === null) return;
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThanOrEqual(24 * 3_600_000);
    }),
    { numRuns: 1000 },
  );
});

test("a huge Retry-After is capped (found by the first property: 14 digits made an Invalid Date retry time)", () => {
  for (const header of ["99999999999999", "9".repeat(400), "Sat, 13 Sep 275760 00:00:00 GMT"])
    expect(parseRetryAfter({ header, now })).toBe(MAX_RETRY_AFTER_MS);
});
