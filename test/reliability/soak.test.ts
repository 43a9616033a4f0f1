/**
 * A 20-second soak of the compiled appliance in the suite (the long one is `make soak`, bench/soak.ts):
 * mixed traffic, then a drain — no 5xx, every message terminal, no job left pending or running, every
 * webhook delivered. Figures are printed; RSS and p99 are reported, not asserted (noisy machines), beyond a
 * generous leak guard.
 */
import { expect, test } from "bun:test";
import { runSoak } from "../../bench/soak";
import { ensureBinary } from "../e2e/binary";

test("20 s of mixed traffic, then drained: nothing left behind", async () => {
  ensureBinary();
  const r = await runSoak(20, { drainSeconds: 70 });
  console.log(`soak: ${JSON.stringify(r)}`);
  expect(Object.keys(r.statuses).filter((s) => Number(s) >= 500)).toEqual([]);
  expect(r.requests).toBeGreaterThan(1000);
  expect({ notTerminal: r.notTerminal, jobsLeft: r.jobsLeft, webhooksUndelivered: r.webhooksUndelivered }).toEqual({
    notTerminal: 0,
    jobsLeft: 0,
    webhooksUndelivered: 0,
  });
  expect(r.rssEndMb).toBeLessThan(500);
}, 120_000);
