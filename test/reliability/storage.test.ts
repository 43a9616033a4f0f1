/**
 * A full disk and a read-only database: writes answer 503 STORAGE_UNAVAILABLE with Retry-After (nothing
 * stored, nothing charged), reads keep working, the file passes integrity_check, and writes succeed again as
 * soon as space returns. The full disk is SQLite's own (`PRAGMA max_page_count` at the current size: the next
 * page the database needs fails with SQLITE_FULL, as on a full file system); read-only is `query_only`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { balanceOf } from "../helpers/messaging";
import { createTestApp, type TestApp } from "../helpers/test-app";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 1e9, burst: 1e9 } } });
});
afterAll(() => app.close());

const sqlite = () => app.deps.db.$client;
const upsert = (i: number) =>
  app.request("POST", "/contacts", {
    body: { firstName: "x".repeat(100), identities: [{ channel: "email", value: `full${i}@example.com` }], tags: [`t${i}`] },
  });
const send = () =>
  app.request("POST", "/messages", {
    body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { name: "hello_world", params: { "body.1": "A" } } },
  });

test("disk full: 503 with Retry-After, nothing stored or charged, reads work, no corruption, recovery", async () => {
  const pages = (sqlite().query("PRAGMA page_count").get() as { page_count: number }).page_count;
  const balance = await balanceOf(app);
  sqlite().exec(`PRAGMA max_page_count = ${pages}`);
  try {
    let full: Awaited<ReturnType<typeof upsert>> | null = null;
    for (let i = 0; i < 5000 && !full; i++) {
      const res = await upsert(i);
      if (res.status !== 201 && res.status !== 200) full = res;
    }
    expect(full?.status).toBe(503);
    expect(full?.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", message: expect.stringContaining("the disk is full") });
    expect(full?.headers.get("retry-after")).toBe("30");
    const sent = await send();
    if (sent.status !== 202) expect(sent.status).toBe(503);
    expect((await app.request("GET", "/contacts?limit=5")).status).toBe(200);
    if (sent.status !== 202) expect(await balanceOf(app)).toBe(balance); // nothing charged for a refused send
  } finally {
    sqlite().exec("PRAGMA max_page_count = 1073741823");
  }
  expect((sqlite().query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
  expect([200, 201]).toContain((await upsert(10_000)).status);
  expect((await send()).status).toBe(202);
});

test("read-only database: 503, then writes again once it is writable", async () => {
  sqlite().exec("PRAGMA query_only = ON");
  try {
    const res = await upsert(20_000);
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", message: expect.stringContaining("read-only") });
    expect((await app.request("GET", "/me")).status).toBe(200);
  } finally {
    sqlite().exec("PRAGMA query_only = OFF");
  }
  expect([200, 201]).toContain((await upsert(20_001)).status);
  expect((sqlite().query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
});
