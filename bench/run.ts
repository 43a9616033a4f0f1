/**
 * `make bench`: every benchmark, one after another (never in parallel: they share 2 cores and one disk).
 * Each prints its own ratios against a baseline measured in the same run; copy the results into
 * bench/RESULTS.md with the command. Pass-through options are not supported here: run a single bench file
 * directly for its flags (see the comment at the top of each).
 */
import { spawnSync } from "bun";
import { join } from "node:path";

const benches = [
  "foundation.bench.ts",
  "messages.bench.ts",
  "send-path.bench.ts",
  "contacts.bench.ts",
  "migration.bench.ts",
  "webhooks.bench.ts",
  "pipeline.bench.ts",
  "campaigns.bench.ts",
];
let failed = 0;
for (const file of benches) {
  console.log(`\n=== ${file} ===`);
  const r = spawnSync([process.execPath, join(import.meta.dir, file)], { stdout: "inherit", stderr: "inherit" });
  if (r.exitCode !== 0) {
    failed++;
    console.error(`${file} exited ${r.exitCode}`);
  }
}
process.exit(failed ? 1 : 0);
