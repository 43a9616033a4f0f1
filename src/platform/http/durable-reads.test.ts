/**
 * Answers built from reads wait for `db.durable()` (durable-reads.plugin.ts): a GET, and an Idempotency-Key
 * replay; a write's own answer already waited for its group's fsync and does not wait again.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

/** Replaces db.durable with a gate the test opens; counts the calls. */
function gate() {
  const real = app.deps.db.durable;
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  const g = { calls: 0, open, restore: () => (app.deps.db.durable = real) };
  app.deps.db.durable = () => {
    g.calls++;
    return opened;
  };
  return g;
}

const answered = async <T>(p: Promise<T>, ms = 50): Promise<boolean> => (await Promise.race([p.then(() => true), Bun.sleep(ms).then(() => false)])) as boolean;

test("a GET is answered only once what it read is durable", async () => {
  const g = gate();
  try {
    const res = app.request("GET", "/contacts?limit=1");
    expect(await answered(res)).toBe(false);
    expect(g.calls).toBe(1);
    g.open();
    expect((await res).status).toBe(200);
  } finally {
    g.restore();
  }
});

test("an Idempotency-Key replay waits too; the first answer (after its own fsync) does not", async () => {
  const body = { channel: "whatsapp", to: { phone: "+14155550142" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } };
  const headers = { "idempotency-key": "durable-replay-1" };
  const g = gate();
  try {
    const first = await app.request("POST", "/messages", { body, headers });
    expect(first.status).toBe(202);
    expect(g.calls).toBe(0);
    const replay = app.request("POST", "/messages", { body, headers });
    expect(await answered(replay)).toBe(false);
    g.open();
    const r = await replay;
    expect(r.status).toBe(202);
    expect(r.headers.get("idempotent-replayed")).toBe("true");
    expect(r.body.data.id).toBe(first.body.data.id);
    expect(g.calls).toBe(1);
  } finally {
    g.restore();
  }
});
