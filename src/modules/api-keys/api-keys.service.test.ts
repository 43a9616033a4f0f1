/**
 * A key revoked (or its expiry moved) by another process — the `switchboard keys` CLI on its own database
 * connection — holds for the very next request: the key cache sees every external commit. On PostgreSQL
 * "next" means from the moment the commit's notification has reached this instance (`externalCommit`
 * waits for exactly that; on SQLite it must already be visible when the commit returns).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Db } from "../../db/client";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { revokeApiKey } from "./api-keys.service";

let app: TestApp;
let cli: Db;
beforeAll(async () => {
  app = await createTestApp();
  cli = app.openConnection();
});
afterAll(() => {
  cli.close();
  app.close();
});

test("revoked by another connection: the very next request is 401 API_KEY_REVOKED", async () => {
  for (let i = 0; i < 20; i++) {
    const { key, apiKey } = await app.newKey({ name: `k${i}` });
    expect((await app.request("GET", "/me", { key })).status).toBe(200); // cached now
    await app.externalCommit(() => revokeApiKey({ db: cli, now: () => new Date(), id: apiKey.id }));
    const res = await app.request("GET", "/me", { key });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe("API_KEY_REVOKED");
  }
});

test("an expiry moved into the past by another connection holds at once", async () => {
  const { key, apiKey } = await app.newKey({ name: "expiring" });
  expect((await app.request("GET", "/me", { key })).status).toBe(200);
  await app.externalCommit(() => cli.sql("UPDATE api_keys SET expires_at = ? WHERE id = ?").run(app.clock.now().getTime() - 1000, apiKey.id));
  expect((await app.request("GET", "/me", { key })).body.error.code).toBe("API_KEY_EXPIRED");
});

test("usage: a request marks its key; the flush (one unit of work) stores last_used_at once and then has nothing left", async () => {
  const { key, apiKey } = await app.newKey({ name: "used" });
  const lastUsed = async () => ((await app.deps.db.sql("SELECT last_used_at AS at FROM api_keys WHERE id = ?").get(apiKey.id)) as { at: unknown }).at;
  const flush = app.deps.scheduler.tasks.get("api-key-usage-flush")!;
  await flush(); // whatever earlier tests left
  expect(await lastUsed()).toBeNull();
  expect((await app.request("GET", "/me", { key })).status).toBe(200);
  expect(await lastUsed()).toBeNull(); // collected in memory, not written per request
  expect(await flush()).toBeGreaterThanOrEqual(1);
  expect(await lastUsed()).not.toBeNull();
  expect(await flush()).toBe(0);
});
