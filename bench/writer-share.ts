/**
 * Issue 40's first question: how much of the HTTP thread's time is the writer's work? Run:
 * `./node_modules/.bin/bun bench/writer-share.ts [--seconds 15] [--connections 50]`.
 * Serves the appliance from source under `bun --cpu-prof` (SQLite, sandbox WhatsApp with its reports), drives
 * POST /messages (a priced template send to one contact) with autocannon, stops it (SIGTERM: the profile is
 * written at exit) and puts each of the main thread's samples of the load's window in the room of its nearest
 * frame of our code: the stores and the engine (SQL, COMMIT), the job loop and the adapters (dispatch, reports,
 * webhooks), the services, or HTTP and the rest (Bun's server, Elysia, the guard, validation, JSON, GC).
 * A writer thread (issue 40) takes the first two at least, and the services' units with them if whole units
 * move; 1 / (what stays) bounds the HTTP thread's own speed-up.
 */
import { spawn } from "bun";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { autocannon, fmt, freePort, initAppliance, ROOT, waitFor } from "./lib";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "15" }, connections: { type: "string", default: "50" } } });
const { configPath, key } = initAppliance({ credit: "1000000" });
const profDir = mkdtempSync(join(tmpdir(), "sb-prof-"));
const port = await freePort();
const server = spawn([process.execPath, "--cpu-prof", `--cpu-prof-dir=${profDir}`, join(ROOT, "src/main.ts"), "serve", "--config", configPath], {
  env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn" },
  stdout: "ignore",
  stderr: "inherit",
});
const url = `http://127.0.0.1:${port}`;
await waitFor(`${url}/healthz`, 60_000);
const started = performance.now();
const load = await autocannon({
  url: `${url}/api/public/v1/messages`,
  method: "POST",
  headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
  body: JSON.stringify({
    channel: "whatsapp",
    to: { phone: "+14155550100" },
    type: "template",
    template: { name: "hello_world", params: { "body.1": "Ann" } },
  }),
  seconds: Number(values.seconds),
  connections: Number(values.connections),
});
const window = [started, performance.now()];
server.kill("SIGTERM");
await server.exited;

type Node = { id: number; callFrame: { functionName: string; url: string }; children?: number[] };
const file = readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"))!;
const p = JSON.parse(readFileSync(join(profDir, file), "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number };
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const byId = new Map(p.nodes.map((n) => [n.id, n]));
// Async code resumes from the microtask queue, so a sample's stack does not reach back to the group commit that
// runs it: each sample is put in the room of the nearest frame of our own code instead (leaf first).
const roomOf = (id: number): "db" | "jobs" | "service" | "http" => {
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const u = byId.get(cur)!.callFrame.url;
    if (!u.includes("/src/")) continue;
    if (/\/src\/db\/|\.repository\.ts$|\.store\.ts$/.test(u)) return "db";
    if (/\/platform\/queue\/|\/channels\/|webhooks\.delivery|messages\.(dispatch|reports|lifecycle)\.ts$/.test(u)) return "jobs";
    if (/\/src\/modules\/|\/src\/events\.ts$/.test(u)) return "service";
    return "http";
  }
  return "http"; // Bun's server, JSON, Elysia, GC
};
// The load's window in the profile's clock, counted back from its end (the profile stops at exit, ~1 s after the load).
const total = p.timeDeltas.reduce((a, b) => a + b, 0);
const loadUs = (window[1]! - window[0]!) * 1000;
const sums = { db: 0, jobs: 0, service: 0, http: 0 };
let at = 0;
for (let i = 0; i < p.samples.length; i++) {
  at += p.timeDeltas[i] ?? 0;
  if (at < total - loadUs - 1_000_000 || at > total - 1_000_000) continue;
  sums[roomOf(p.samples[i]!)] += p.timeDeltas[i] ?? 0;
}
const busy = sums.db + sums.jobs + sums.service + sums.http;
const pct = (x: number) => `${fmt((100 * x) / busy, 1)} %`;
console.log(`POST /messages, ${values.connections} connections, ${values.seconds} s: ${fmt(load.rps)} req/s, p50 ${load.p50} ms, p99 ${load.p99} ms`);
console.log(`main thread, the load's window: ${fmt(busy / 1000)} ms of samples`);
console.log(
  `  stores and engine (SQL, COMMIT) ${pct(sums.db)}, job loop and adapters ${pct(sums.jobs)}, services ${pct(sums.service)}, HTTP and the rest ${pct(sums.http)}`,
);
const moved = sums.db + sums.jobs;
console.log(
  `  with the stores and the job loop on a writer thread, the HTTP thread keeps ${pct(busy - moved)}: at most ${fmt(busy / (busy - moved), 2)}× its speed`,
);
console.log(`  with the services' units too: keeps ${pct(sums.http)}, at most ${fmt(busy / sums.http, 2)}×`);
rmSync(profDir, { recursive: true, force: true });
