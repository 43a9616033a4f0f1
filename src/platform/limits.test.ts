/**
 * API-key rate limits and channel-account send throttles: the in-memory stores (one process per SQLite
 * database) and the shared ones on PostgreSQL, where several instances must book from one bucket and one
 * schedule — a limit is never multiplied by the number of instances (DESIGN §15).
 */
import { afterAll, describe, expect, test } from "bun:test";
import type { Db } from "../db/client";
import { postgresAvailable, postgresInstances } from "../../test/helpers/postgres";
import { createRateLimiter, createSharedRateLimiter, type RateLimiter } from "./http/rate-limit";
import { createSharedThrottle, createThrottle, type Throttle } from "./throttle";

const LIMIT = { ratePerSecond: 2, burst: 3 };
/** [ms since start, allowed, RateLimit header] — a burst, a refill, a clock that steps back. */
const SCRIPT: [number, boolean, string][] = [
  [0, true, `"default";r=2;t=1`],
  [0, true, `"default";r=1;t=1`],
  [0, true, `"default";r=0;t=2`],
  [0, false, `"default";r=0;t=2`],
  [499, false, `"default";r=0;t=2`],
  [500, true, `"default";r=0;t=2`],
  [400, false, `"default";r=0;t=2`], // another instance's clock, a little behind: no second refill
  [2000, true, `"default";r=2;t=1`],
  [10_000, true, `"default";r=2;t=1`],
];

async function runScript(limiter: RateLimiter, clock: { t: number }, key: string) {
  const out: [number, boolean, string | undefined][] = [];
  for (const [at] of SCRIPT) {
    clock.t = 1_700_000_000_000 + at;
    const d = await limiter.take(key, LIMIT);
    out.push([at, d.allowed, d.headers.ratelimit]);
  }
  return out;
}

test("in memory: the token bucket refills at the rate, caps at the burst, answers with the draft's headers", async () => {
  const clock = { t: 0 };
  expect(await runScript(createRateLimiter({ now: () => clock.t }), clock, "k")).toEqual(SCRIPT);
  clock.t = 1_700_000_000_000;
  const refused = createRateLimiter({ now: () => clock.t });
  for (let i = 0; i < 3; i++) refused.take("k", LIMIT);
  const d = refused.take("k", LIMIT);
  expect(d).toMatchObject({ allowed: false, retryAfterSeconds: 1, headers: { "ratelimit-policy": `"default";q=3;w=2` } });
});

test("in process: the throttle hands out one slot per 1/rate and refuses beyond the horizon", async () => {
  let t = 1000;
  const throttle = createThrottle({ now: () => t });
  const waits: number[] = [];
  for (let i = 0; i < 4; i++) waits.push(await throttle.reserveSlot("acc", 10, 250));
  expect(waits).toEqual([0, 100, 200, -1]);
  t += 1000;
  expect(await throttle.reserveSlot("acc", 10, 250)).toBe(0);
  expect(await throttle.reserveSlot("acc", 10, 250)).toBe(100);
});

describe.skipIf(!postgresAvailable())("shared in PostgreSQL", () => {
  const open: Db[] = [];
  afterAll(() => open.forEach((db) => db.close()));
  async function twoInstances(): Promise<[Db, Db]> {
    const [a, b] = (await postgresInstances(2)) as [Db, Db];
    open.push(a, b);
    return [a, b];
  }

  test("the bucket gives the same answers as the in-memory one", async () => {
    const [db] = await twoInstances();
    const clock = { t: 0 };
    expect(await runScript(createSharedRateLimiter({ db, now: () => clock.t }), clock, "k")).toEqual(SCRIPT);
  });

  test("two instances take from one bucket: the burst is allowed once, not once per instance", async () => {
    const [a, b] = await twoInstances();
    const t = 1_700_000_000_000;
    const limiters = [createSharedRateLimiter({ db: a, now: () => t }), createSharedRateLimiter({ db: b, now: () => t })];
    const limit = { ratePerSecond: 1, burst: 10 };
    let allowed = 0;
    for (let i = 0; i < 40; i++) if ((await limiters[i % 2]!.take("key_1", limit)).allowed) allowed++;
    expect(allowed).toBe(10);
    // other keys have their own buckets
    expect((await limiters[1]!.take("key_2", limit)).allowed).toBe(true);
  });

  test("the requests of one key that come together take their tokens in one statement, with the answers of one take each", async () => {
    const [a, b] = await twoInstances();
    let t = 1_700_000_000_000;
    const limiter = createSharedRateLimiter({ db: a, now: () => t });
    const pool = (a as unknown as { pool: { statements: number } }).pool;
    const before = pool.statements;
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.take("key_b", LIMIT))); // one turn
    expect(pool.statements - before).toBe(1);
    const alone = createRateLimiter({ now: () => t });
    const expected = Array.from({ length: 5 }, () => alone.take("key_b", LIMIT));
    expect(decisions).toEqual(expected); // allowed, allowed, allowed (r=2, 1, 0), refused, refused
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    // Another instance's batch beside it takes from the same bucket: after 1 s, two tokens for the four of them.
    t += 1000;
    const other = createSharedRateLimiter({ db: b, now: () => t });
    const both = await Promise.all([...[1, 2].map(() => limiter.take("key_b", LIMIT)), ...[1, 2].map(() => other.take("key_b", LIMIT))]);
    expect(both.filter((d) => d.allowed)).toHaveLength(2);
  });

  test("two instances book one send schedule: 10/s from both is 10/s in all", async () => {
    const [a, b] = await twoInstances();
    const throttles: Throttle[] = [createSharedThrottle({ db: a }), createSharedThrottle({ db: b })];
    const started = performance.now();
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) waits.push(await throttles[i % 2]!.reserveSlot("acc_1", 10, 5000));
    const elapsed = performance.now() - started;
    // slot k is k × 100 ms after the first, whichever instance booked it (less the time the booking took)
    waits.forEach((w, k) => {
      expect(w).toBeGreaterThan(k * 100 - elapsed - 1);
      expect(w).toBeLessThanOrEqual(k * 100 + 1);
    });
    // beyond the horizon: refused, nothing booked, and the next booking still lands after the eighth slot
    expect(await throttles[0]!.reserveSlot("acc_1", 10, 300)).toBe(-1);
    expect(await throttles[1]!.reserveSlot("acc_1", 10, 5000)).toBeGreaterThan(800 - (performance.now() - started) - 1);
    expect(await throttles[1]!.reserveSlot("acc_2", 10, 5000)).toBe(0); // another key: a schedule of its own
  });
});
