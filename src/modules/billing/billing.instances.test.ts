/**
 * Two apps on one database (DESIGN §15), in one process: the accounting is exact on both engines. Their
 * transactions take turns here (bun:sqlite and this process's PostgreSQL connection are synchronous); the race
 * itself — two processes writing at once, no cluster-wide lock — is test/reliability/two-instances.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { balanceOf } from "../../../test/helpers/messaging";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

const fast = { rate_limit: { requests_per_second: 1e6, burst: 1e6 } };
let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  a = await createTestApp({ balance: "1.500000", config: fast }); // 30 sends at 0.050000
  b = await createTestApp({ dataDir: a.dir, config: fast }); // a second instance on a's database
});
afterAll(async () => {
  await b.close({ keepData: true });
  await a.close();
});

const count = async (sql: string) => ((await a.deps.db.sql(sql).get()) as { n: number }).n;

test("two instances take 80 priced sends at once for a balance of 30: exactly 30 accepted, the balance 0, the rest 402", async () => {
  const hello = { name: "hello_world", params: { "body.1": "Ann" } };
  const send = (app: TestApp, i: number) =>
    app.request("POST", "/messages", {
      body: { channel: "whatsapp", to: { phone: `+1415555${String(2000 + i)}` }, type: "template", template: hello },
      key: a.key,
    });
  const results = await Promise.all(Array.from({ length: 80 }, (_, i) => send(i % 2 ? b : a, i)));
  const accepted = results.filter((r) => r.status === 202);
  const refused = results.filter((r) => r.status === 402);
  expect(accepted).toHaveLength(30);
  expect(refused).toHaveLength(50);
  expect(refused.every((r) => r.body.error.code === "INSUFFICIENT_BALANCE")).toBe(true);
  expect(await balanceOf(a)).toBe("0.000000");
  expect(await balanceOf(b)).toBe("0.000000");
  // Every accepted message paid once, and the ledger's running balance agrees with the row.
  expect(await count("SELECT count(*) AS n FROM messages")).toBe(30);
  expect(await count("SELECT count(*) AS n FROM ledger_entries WHERE kind = 'debit'")).toBe(30);
  expect(await count("SELECT min(balance_after) AS n FROM ledger_entries")).toBe(0);
  expect(await count("SELECT sum(amount) AS n FROM ledger_entries")).toBe(0);
});

test("two instances meet one new address at once: one contact, one open conversation, every send accepted", async () => {
  const to = { phone: "+14155553999" };
  await a.deps.ledger.credit({ companyId: a.company.id, amount: 10_000_000 });
  const hello = { name: "hello_world", params: { "body.1": "Ann" } };
  const results = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      (i % 2 ? b : a).request("POST", "/messages", { body: { channel: "whatsapp", to, type: "template", template: hello }, key: a.key }),
    ),
  );
  expect(results.map((r) => r.status)).toEqual(Array(16).fill(202));
  expect(new Set(results.map((r) => r.body.data.contactId)).size).toBe(1);
  expect(await count("SELECT count(*) AS n FROM contact_identities WHERE value = '+14155553999'")).toBe(1);
  expect(await count(`SELECT count(*) AS n FROM conversations WHERE status = 'open' AND contact_id = '${results[0]!.body.data.contactId}'`)).toBe(1);
});
