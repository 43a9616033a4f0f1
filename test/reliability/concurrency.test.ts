/**
 * Concurrency through the real app: N parallel priced sends with balance for M (no overdraw, ledger ==
 * charged), and N parallel duplicates of one Idempotency-Key (one message). Figures printed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../helpers/test-app";

const hello = { name: "hello_world", params: { "body.1": "Ann" } };
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ balance: "0.250000", config: { rate_limit: { requests_per_second: 1_000_000, burst: 1_000_000 } } });
});
afterAll(() => app.close());

const one = (sql: string) => (app.deps.db.$client.query(sql).get() as { n: number }).n;

test("overdraw: 40 parallel priced sends with balance for 5", async () => {
  const N = 40;
  const res = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: `+1415${String(4_000_000 + i)}` }, type: "template", template: hello } }),
    ),
  );
  await app.deps.queue.drain();
  const by: Record<number, number> = {};
  for (const r of res) by[r.status] = (by[r.status] ?? 0) + 1;
  const balance = await app.deps.ledger.balance(app.company.id);
  const charged = one("SELECT coalesce(sum(unit_price), 0) AS n FROM messages WHERE charged = 1 AND refunded = 0");
  const debits = -one("SELECT coalesce(sum(amount), 0) AS n FROM ledger_entries WHERE message_id IS NOT NULL");
  console.log(`overdraw: ${N} parallel sends, balance for 5 → ${JSON.stringify(by)}; balance after ${balance} µ; ledger ${debits} µ == charged ${charged} µ`);
  expect(by[202]).toBe(5);
  expect(balance).toBeGreaterThanOrEqual(0);
  expect(debits).toBe(charged);
});

test("idempotency: 30 parallel duplicates of one key make one message", async () => {
  await app.deps.ledger.credit({ companyId: app.company.id, amount: 10_000_000, description: "more" });
  const before = one("SELECT count(*) AS n FROM messages");
  const res = await Promise.all(
    Array.from({ length: 30 }, () =>
      app.request("POST", "/messages", {
        headers: { "idempotency-key": "dup-1" },
        body: { channel: "whatsapp", to: { phone: "+14155559000" }, type: "template", template: hello },
      }),
    ),
  );
  const by: Record<number, number> = {};
  for (const r of res) by[r.status] = (by[r.status] ?? 0) + 1;
  const ids = new Set(res.filter((r) => r.status === 202).map((r) => r.body.data.id));
  console.log(`idempotency: 30 parallel duplicates → ${JSON.stringify(by)}, ${ids.size} distinct message id(s)`);
  expect(one("SELECT count(*) AS n FROM messages") - before).toBe(1);
  expect(ids.size).toBe(1);
});
