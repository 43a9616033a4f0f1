/**
 * Latency that does not grow with the data (issue 42): GET /contacts?tag= walks the tag's own index range,
 * newest first, and stops after the page — whatever the number of contacts in the company. SQLite plans it
 * without statistics (the appliance never runs ANALYZE), so the statement's text must fix the order.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createContactsStore } from "./contacts.repository";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test.skipIf(process.env.SWITCHBOARD_TEST_ENGINE === "postgres")(
  "the tag list is driven by the tag's index, with no scan of the company's contacts and no sort",
  async () => {
    const db = app.deps.db;
    const seen: string[] = [];
    const sql = db.sql.bind(db);
    db.sql = (text: string) => (seen.push(text), sql(text));
    try {
      const store = createContactsStore(db);
      for (const tagIds of [["t1"], ["t1", "t2"]]) {
        seen.length = 0;
        await store.listPage({ companyId: app.company.id, tagIds, tagMatch: "all", limit: 50, before: "0193ffff-0000-7000-8000-000000000000" });
        const statement = seen.find((t) => t.includes("FROM contact_tags t0"))!;
        // NB! Prepared and finalized here, not through db.sql: a cached EXPLAIN statement kept the table locked
        // for the checkpoint at close (SQLITE_LOCKED). A SQLite-only diagnostic of the raw connection.
        const explain = db.$client.prepare(`EXPLAIN QUERY PLAN ${statement}`);
        const plan = (explain.all() as { detail: string }[]).map((r) => r.detail);
        explain.finalize();
        expect(plan[0]).toMatch(/^SEARCH t0 USING (COVERING )?INDEX/);
        expect(plan.some((d) => /^SCAN c\b/.test(d))).toBe(false);
        expect(plan.some((d) => d.includes("TEMP B-TREE"))).toBe(false);
      }
    } finally {
      db.sql = sql;
    }
  },
);
