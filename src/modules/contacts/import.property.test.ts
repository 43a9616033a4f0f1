/**
 * Property tests (fast-check) of the parsers an import feeds untrusted text to: the CSV reader (csv.ts), the
 * whole CSV/NDJSON row check (import-rows.ts) and identity normalisation (identity.ts). The examples stay in
 * contact-imports.test.ts and contacts.service.test.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { CHANNELS } from "../../channels/channel.types";
import { createCsvReader } from "./csv";
import { tryNormaliseIdentity } from "./identity";
import { checkedRows, type ImportFormat } from "./import-rows";

const dir = mkdtempSync(join(tmpdir(), "sb-import-prop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Any text, including NUL, lone surrogates, quotes, commas and every kind of line end. */
const trickyChars = fc.array(fc.constantFrom('"', ",", "\r", "\n", " ", "a", "\0"), { maxLength: 12 }).map((cs) => cs.join(""));
const cellText = fc.oneof(fc.string({ unit: "binary", maxLength: 30 }), trickyChars);
const rowsArb = fc.array(fc.array(cellText, { minLength: 1, maxLength: 6 }), { maxLength: 12 });

/** RFC 4180 writer: quotes what needs it (and, at random, what does not); a lone empty field is quoted so the row is not blank. */
function writeCsv(rows: string[][], eol: string, quoteAll: boolean): string {
  return rows
    .map((row) => row.map((f) => (quoteAll || /[",\r\n]/.test(f) || (row.length === 1 && f === "") ? `"${f.replaceAll('"', '""')}"` : f)).join(","))
    .join(eol);
}

/** The text in pieces cut at the given points (a stream's chunk boundaries fall anywhere). */
function read(text: string, cuts: number[], maxRecord?: number): (string[] | null)[] {
  const r = createCsvReader({ maxRecord });
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: (string[] | null)[] = [];
  let from = 0;
  for (const c of [...at, text.length]) {
    out.push(...r.push(text.slice(from, c)));
    from = c;
  }
  out.push(...r.end());
  return out;
}

test("property: CSV written from any rows reads back to the same rows, whatever the line ends, quoting and chunk boundaries", () => {
  fc.assert(
    fc.property(
      rowsArb,
      fc.constantFrom("\n", "\r\n", "\r"),
      fc.boolean(),
      fc.boolean(),
      fc.array(fc.nat(), { maxLength: 8 }),
      (rows, eol, quoteAll, trailingEol, cuts) => {
        const text = writeCsv(rows, eol, quoteAll) + (trailingEol && rows.length ? eol : "");
        expect(read(text, cuts)).toEqual(rows);
      },
    ),
    { numRuns: 1000 },
  );
});

test("property: any text reads without throwing, the same records whatever the chunking, none over maxRecord", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "binary", maxLength: 200 }),
      fc.array(fc.nat(), { maxLength: 8 }),
      fc.integer({ min: 1, max: 50 }),
      (text, cuts, maxRecord) => {
        expect(read(text, cuts)).toEqual(read(text, []));
        for (const rec of read(text, cuts, maxRecord)) if (rec) expect(rec.join("").length).toBeLessThanOrEqual(maxRecord);
      },
    ),
    { numRuns: 1000 },
  );
});

async function check(format: ImportFormat, text: string) {
  const file = join(dir, `f.${format}`);
  writeFileSync(file, text);
  const out = [];
  for await (const r of checkedRows({ file, format, defs: new Map(), skip: 0 })) out.push(r);
  return out;
}

test("property: a CSV import of any cells never throws; one result per record, numbered in order, each written or with reasons", async () => {
  const header = ["firstName", "lastName", "tags", "optIn", "consentAt", "email", "whatsapp", "telegram", "customFields.k"];
  await fc.assert(
    fc.asyncProperty(fc.array(fc.array(cellText, { minLength: header.length, maxLength: header.length }), { minLength: 1, maxLength: 8 }), async (rows) => {
      const records = read(writeCsv(rows, "\n", false), []);
      const out = await check("csv", `${header.join(",")}\n${writeCsv(rows, "\n", false)}`);
      expect(out.map((r) => r.row)).toEqual(records.map((_, i) => i + 1));
      for (const r of out) if ("errors" in r) expect(r.errors.length).toBeGreaterThan(0);
    }),
    { numRuns: 150 },
  );
});

test("property: an NDJSON import of any lines never throws; every non-blank line is one result", async () => {
  const line = fc.oneof(
    fc.string({ unit: "binary", maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, "")),
    fc.json({ maxDepth: 3 }),
  );
  await fc.assert(
    fc.asyncProperty(fc.array(line, { maxLength: 10 }), async (lines) => {
      const out = await check("ndjson", lines.join("\n"));
      expect(out).toHaveLength(lines.filter((l) => l.trim()).length);
    }),
    { numRuns: 150 },
  );
});

const identityText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.emailAddress(),
  fc.stringMatching(/^ ?\+?[1-9][0-9 ().-]{6,16} ?$/),
  fc.stringMatching(/^ ?@?[A-Za-z0-9_.]{1,20} ?$/),
);

test("property: identity normalisation never throws, and is idempotent and blind to surrounding blanks", () => {
  fc.assert(
    fc.property(fc.constantFrom(...CHANNELS, "sms", ""), identityText, (channel, value) => {
      const first = tryNormaliseIdentity(channel, value);
      if ("error" in first) return;
      expect(tryNormaliseIdentity(channel, first.value)).toEqual(first);
      expect(tryNormaliseIdentity(channel, ` ${value}\t`)).toEqual(first);
      expect(first.value).toBe(first.value.trim());
      if (channel === "email") expect(first.value).toBe(first.value.toLowerCase());
      if (channel === "whatsapp") expect(first.value).toMatch(/^\+[1-9]\d{3,14}$/);
    }),
    { numRuns: 3000 },
  );
});
