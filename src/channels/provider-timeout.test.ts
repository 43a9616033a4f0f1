import { afterAll, expect, test } from "bun:test";
import { xFailure } from "./x/x.errors";
import { tiktokHttpFailure } from "./tiktok/tiktok.errors";
import { boundedFetch, providerTimeoutMs } from "./provider-timeout";

// A provider that takes the request and never answers.
const silent = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => {}) });
afterAll(() => silent.stop(true));

test("a provider call gets a quarter of the job lease (15 s with the default 60 s)", () => {
  expect(providerTimeoutMs(60)).toBe(15_000);
  expect(providerTimeoutMs(5)).toBe(1_250);
});

test("bounded fetch aborts a call that hears nothing back; a call with its own signal keeps it", async () => {
  const f = boundedFetch(fetch, 150);
  const t0 = performance.now();
  await expect(f(`http://127.0.0.1:${silent.port}/`, { method: "POST", body: "{}" })).rejects.toThrow();
  expect(performance.now() - t0).toBeLessThan(1_000);

  const own = new AbortController();
  const call = f(`http://127.0.0.1:${silent.port}/`, { signal: own.signal });
  const outcome = await Promise.race([
    call.then(
      () => "answered",
      () => "aborted",
    ),
    Bun.sleep(400).then(() => "still waiting"),
  ]);
  expect(outcome).toBe("still waiting"); // the 150 ms bound did not apply
  own.abort();
  await expect(call).rejects.toThrow();
});

test("Retry-After is honoured where the provider's own form is missing (X 429 and 503, TikTok's gateway)", () => {
  const now = new Date("2025-06-01T10:00:00Z");
  const headers = new Headers({ "retry-after": "7" });
  expect(xFailure({ status: 429, problem: undefined, headers, now })).toMatchObject({ retry: true, reason: "RATE_LIMITED", retryAfterMs: 7_000 });
  expect(xFailure({ status: 503, problem: undefined, headers, now })).toMatchObject({ retry: true, reason: "PROVIDER_UNAVAILABLE", retryAfterMs: 7_000 });
  // X's own reset header wins over a proxy's Retry-After.
  const reset = new Headers({
    "retry-after": "7",
    "x-rate-limit-limit": "200",
    "x-rate-limit-remaining": "0",
    "x-rate-limit-reset": String(now.getTime() / 1000 + 60),
  });
  expect(xFailure({ status: 429, problem: undefined, headers: reset, now }).retryAfterMs).toBe(60_000);
  expect(tiktokHttpFailure({ status: 429, message: "slow down", retryAfterMs: 7_000 })).toMatchObject({
    retry: true,
    reason: "RATE_LIMITED",
    retryAfterMs: 7_000,
  });
  expect(tiktokHttpFailure({ status: 502, message: "bad gateway" })).not.toHaveProperty("retryAfterMs");
});
