/** Bulk import: NDJSON and CSV through the API and the job loop; per-row errors; the opt-out rule. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createCsvReader } from "./csv";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 10000, burst: 10000 } } });
  await app.request("POST", "/custom-fields", { body: { key: "score", label: "Score", type: "number" } });
});
afterAll(() => app.close());

async function runImport(raw: string, contentType: string) {
  const r = await app.request("POST", "/contacts/import", { raw, headers: { "content-type": contentType } });
  if (r.status !== 202) throw new Error(`${r.status} ${JSON.stringify(r.body)}`);
  expect(r.body.data.status).toBe("queued");
  await app.deps.queue.drain();
  return (await app.request("GET", `/contacts/imports/${r.body.data.id}`)).body.data;
}

describe("CSV reader", () => {
  test("quotes, doubled quotes, embedded newlines, CRLF, chunk boundaries", () => {
    const text = 'a,b,c\r\n"x, y","he said ""hi""","multi\nline"\r\n1,,3\n';
    for (const size of [1, 2, 5, 1000]) {
      const r = createCsvReader();
      const out: string[][] = [];
      for (let i = 0; i < text.length; i += size) out.push(...r.push(text.slice(i, i + size)));
      out.push(...r.end());
      expect(out).toEqual([["a", "b", "c"], ["x, y", 'he said "hi"', "multi\nline"], ["1", "", "3"]]);
    }
  });
});

describe("POST /contacts/import", () => {
  test("NDJSON: creates, updates, reports bad rows with row numbers and pointers, keeps going", async () => {
    const rows = [
      { firstName: "Imp1", identities: [{ channel: "email", value: "imp1@example.com" }], tags: ["imported"], customFields: { score: 1 } },
      { firstName: "Imp2", identities: [{ channel: "whatsapp", value: "+4915112340002" }] },
      "{not json",
      { identities: [{ channel: "email", value: "bad" }], customFields: { nope: 1 } },
      { lastName: "Again", identities: [{ channel: "email", value: "IMP1@example.com" }] },
      { identities: [] },
    ];
    const raw = rows.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n") + "\n\n";
    const imp = await runImport(raw, "application/x-ndjson");
    expect(imp).toMatchObject({ status: "completed", format: "ndjson", processed: 6, created: 2, updated: 1, failed: 3, errorsTruncated: false });
    expect(imp.errors).toEqual([
      { row: 3, pointer: "/", message: "not valid JSON" },
      { row: 4, pointer: "/identities/0/value", message: "must be an e-mail address" },
      { row: 4, pointer: "/customFields/nope", message: "unknown custom field (see GET /custom-fields)" },
      { row: 6, pointer: "/identities", message: expect.any(String) },
    ]);
    const list = (await app.request("GET", "/contacts?tag=imported")).body.data;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ firstName: "Imp1", lastName: "Again", customFields: { score: 1 } });
  });

  test("CSV with header: channel columns, tags, optIn, customFields.<key>", async () => {
    const csv = [
      "firstName,lastName,email,whatsapp,tags,optIn,customFields.score",
      'Cee,"Ess, Vee",cee@example.com,+4915112340010,csv|batch,yes,7',
      "Dee,,dee@example.com,,csv,,",
      "Bad,,,,,maybe,",
    ].join("\r\n");
    const imp = await runImport(csv, "text/csv; charset=utf-8");
    expect(imp).toMatchObject({ status: "completed", format: "csv", processed: 3, created: 2, failed: 1 });
    expect(imp.errors[0]).toMatchObject({ row: 3, pointer: "/optIn" });
    const cee = (await app.request("GET", "/contacts?q=cee")).body.data[0];
    expect(cee).toMatchObject({ lastName: "Ess, Vee", tags: ["batch", "csv"], customFields: { score: 7 }, consent: { email: { status: "opted_in" }, whatsapp: { status: "opted_in" } } });
  });

  test("CSV with an unknown column fails the import with a clear error", async () => {
    const imp = await runImport("firstName,fax\nA,1\n", "text/csv");
    expect(imp).toMatchObject({ status: "failed", processed: 0, error: "Unknown CSV column(s): fax" });
  });

  test("an import never overwrites an explicit opt-out unless consentAt is later than the opt-out", async () => {
    const c = (await app.request("POST", "/contacts", { body: { identities: [{ channel: "email", value: "optout@example.com" }], optIn: true } })).body.data.contact;
    await app.request("POST", `/contacts/${c.id}/opt-out`, { body: { channels: ["email"] } });
    const optedOutAt = app.clock.now();
    app.clock.advance(60_000);
    const kept = await runImport(JSON.stringify({ identities: [{ channel: "email", value: "optout@example.com" }], optIn: true }), "application/x-ndjson");
    expect(kept).toMatchObject({ updated: 1, consentKept: 1 });
    expect((await app.request("GET", `/contacts/${c.id}`)).body.data.consent.email.status).toBe("opted_out");
    const stale = await runImport(
      JSON.stringify({ identities: [{ channel: "email", value: "optout@example.com" }], optIn: true, consentAt: new Date(optedOutAt.getTime() - 1000).toISOString() }),
      "application/x-ndjson",
    );
    expect(stale.consentKept).toBe(1);
    const fresh = await runImport(
      JSON.stringify({ identities: [{ channel: "email", value: "optout@example.com" }], optIn: true, consentAt: new Date(optedOutAt.getTime() + 1000).toISOString() }),
      "application/x-ndjson",
    );
    expect(fresh.consentKept).toBe(0);
    const after = (await app.request("GET", `/contacts/${c.id}`)).body.data;
    expect(after.consent.email.status).toBe("opted_in");
    const history = app.deps.db.$client.query("SELECT status, source FROM consent_history WHERE contact_id = ? ORDER BY id").all(c.id);
    expect(history).toEqual([
      { status: "opted_in", source: "api" },
      { status: "opted_out", source: "api" },
      { status: "opted_in", source: "import" },
    ]);
  });

  test("stored errors are capped; failed counts every row", async () => {
    const raw = Array.from({ length: 1205 }, () => "nope").join("\n");
    const imp = await runImport(raw, "application/x-ndjson");
    expect(imp.failed).toBe(1205);
    expect(imp.errors).toHaveLength(1000);
    expect(imp.errorsTruncated).toBe(true);
  });

  test("wrong content type and empty body → 422; unknown import → 404", async () => {
    const a = await app.request("POST", "/contacts/import", { raw: "{}", headers: { "content-type": "application/json" } });
    expect(a.status).toBe(422);
    expect(a.body.error.details[0].pointer).toBe("header:Content-Type");
    const b = await app.request("POST", "/contacts/import", { raw: "", headers: { "content-type": "text/csv" } });
    expect(b.status).toBe(422);
    expect((await app.request("GET", "/contacts/imports/00000000-0000-7000-8000-000000000000")).status).toBe(404);
  });

  test("a retried job resumes at `processed` (no row applied twice)", async () => {
    const raw = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ identities: [{ channel: "email", value: `resume${i}@example.com` }] })).join("\n");
    const r = await app.request("POST", "/contacts/import", { raw, headers: { "content-type": "application/x-ndjson" } });
    // Pretend a crash after the first batch committed.
    app.deps.db.$client.query("UPDATE contact_imports SET processed = 1000, created = 1000 WHERE id = ?").run(r.body.data.id);
    await app.deps.queue.drain();
    const imp = (await app.request("GET", `/contacts/imports/${r.body.data.id}`)).body.data;
    expect(imp).toMatchObject({ status: "completed", processed: 2500, created: 2500, failed: 0 });
    const n = app.deps.db.$client.query("SELECT count(*) AS n FROM contact_identities WHERE value LIKE 'resume%'").get() as { n: number };
    expect(n.n).toBe(1500); // rows 1..1000 were skipped as already done
  });
});
