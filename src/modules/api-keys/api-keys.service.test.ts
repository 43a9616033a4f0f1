/**
 * A key revoked (or its expiry moved) by another process — the `switchboard keys` CLI on its own database
 * connection — holds for the very next request: the key cache sees every external commit. On PostgreSQL
 * "next" means from the moment the commit's notification has reached this instance (`externalCommit`
 * waits for exactly that; on SQLite it must already be visible when the commit returns).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Db } from "../../db/client";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createAuthenticator, hashKey, type KeyPrincipal } from "../../platform/http/api-guard.plugin";
import { createRateLimiter } from "../../platform/http/rate-limit";
import { createKeyResolver, revokeApiKey } from "./api-keys.service";

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

test("the guard's hot path: a key's first lookup awaits the store, later ones are answered from the cache without a promise; an unknown key is not cached", async () => {
  const version = app.deps.db.dataVersion();
  const { key } = await app.newKey({ name: "hot" });
  // PostgreSQL: the key's own notification empties the caches when it arrives (no later than 2 s): wait for it.
  for (const sent = performance.now(); app.deps.db.engine === "postgres" && app.deps.db.dataVersion() === version; await Bun.sleep(1))
    expect(performance.now() - sent).toBeLessThan(2_000);
  const keys = createKeyResolver({ db: app.deps.db, now: app.deps.now });
  const first = keys.resolveKey(hashKey(key));
  expect(first).toBeInstanceOf(Promise);
  expect((await first)?.name).toBe("hot");
  const hit = keys.resolveKey(hashKey(key));
  expect(hit).not.toBeInstanceOf(Promise);
  expect((hit as KeyPrincipal).companySlug).toBe(app.company.slug);

  const unknown = hashKey("sb_live_unknown");
  expect(await keys.resolveKey(unknown)).toBeNull();
  expect(keys.resolveKey(unknown)).toBeInstanceOf(Promise); // asked again: a key created meanwhile must work

  // With the in-memory limiter (SQLite), the whole authentication of a cached key is synchronous.
  const authenticate = createAuthenticator({
    now: app.deps.now,
    resolveKey: keys.resolveKey,
    markKeyUsed: () => {},
    limiter: createRateLimiter({ now: () => app.clock.now().getTime() }),
    rateDefaults: { requestsPerSecond: 100, burst: 100 },
    trustedProxies: [],
  });
  const request = new Request("http://localhost/api/public/v1/me", { headers: { authorization: `Bearer ${key}` } });
  const principal = authenticate(request, () => undefined, {});
  expect(principal).not.toBeInstanceOf(Promise);
  expect((principal as KeyPrincipal).name).toBe("hot");
});
