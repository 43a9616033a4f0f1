/**
 * Idempotency across processes on one database (instances on PostgreSQL; on SQLite a second process on the
 * file): each process tracks its in-flight keys itself, so two may begin the same key at once — the record
 * written in the business transaction decides, and the operation runs once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let a: TestApp;
let b: TestApp;
beforeAll(async () => {
  a = await createTestApp({ config: { rate_limit: { requests_per_second: 1e6, burst: 1e6 } } });
  b = await createTestApp({ dataDir: a.dir, config: { rate_limit: { requests_per_second: 1e6, burst: 1e6 } } }); // a second instance on a's database
});
afterAll(async () => {
  await b.close({ keepData: true });
  await a.close();
});

const hello = { name: "hello_world", params: { "body.1": "Ann" } };
const count = async (sql: string, ...args: string[]) => ((await a.deps.db.sql(sql).get(...args)) as { n: number }).n;

test("the same key on two instances at once: one message, the other request 409, then replays of the one", async () => {
  for (let round = 0; round < 5; round++) {
    const key = `two-instances-${round}`;
    const body = { channel: "whatsapp", to: { phone: `+1415555${String(7000 + round)}` }, type: "template", template: hello };
    const send = (app: TestApp) => app.request("POST", "/messages", { body, key: a.key, headers: { "idempotency-key": key } });
    const results = await Promise.all([send(a), send(b), send(a), send(b)]);
    const ok = results.filter((r) => r.status === 202);
    const refused = results.filter((r) => r.status === 409);
    expect(ok.length).toBe(1);
    expect(refused.length).toBe(results.length - 1);
    expect(refused.every((r) => r.body.error.code === "IDEMPOTENCY_CONFLICT")).toBe(true);
    expect(await count("SELECT count(*) AS n FROM messages WHERE address = ?", body.to.phone)).toBe(1);
    for (const app of [a, b]) {
      const replay = await send(app);
      expect(replay.status).toBe(202);
      expect(replay.headers.get("idempotent-replayed")).toBe("true");
      expect(replay.body.data.id).toBe(ok[0]!.body.data.id);
    }
  }
});
