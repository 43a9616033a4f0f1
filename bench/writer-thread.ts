/**
 * Issue 40: what does handing each group of work to a writer thread cost, and what does it buy? Run:
 * `./node_modules/.bin/bun bench/writer-thread.ts [--seconds 10] [--connections 50] [--pairs 2] [--jobs on|off]
 * [--modes serve,local,batched,thread] [--load wrk|autocannon]`.
 * Each pair: the bare group-commit route (the yardstick), then POST /messages (a priced template send to one
 * contact, the sandbox dispatching and reporting) served in each mode on a fresh appliance — `serve` (the
 * appliance from source), and bench/writer-thread.server.ts's `local` (the unit and the job loop on the HTTP
 * thread, as `serve`), `batched` (the hand-over's batches and JSON, on the same thread) and `thread` (the unit
 * and the job loop on a writer thread; the HTTP thread keeps HTTP, the guard and validation). Prints req/s,
 * p50/p99, the CPU a request of the process and of its busiest threads, and each mode's ratio to the bare route.
 * NB! Read the threads' CPU a request first: on 2 cores with the load generator beside the server, req/s is
 * bounded by the box's CPU, not by the busiest thread.
 */
import { spawn } from "bun";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { threadCpu, bareGroupCommitServer, wrk, autocannon, cpuPerRequest, cpuSeconds, fmt, freePort, initAppliance, ROOT, waitFor } from "./lib";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    connections: { type: "string", default: "50" },
    pairs: { type: "string", default: "2" },
    jobs: { type: "string", default: "on" },
    modes: { type: "string", default: "local,thread" },
    load: { type: "string", default: Bun.which("wrk") ? "wrk" : "autocannon" },
  },
});
const body = JSON.stringify({
  channel: "whatsapp",
  to: { phone: "+14155550100" },
  type: "template",
  template: { name: "hello_world", params: { "body.1": "Ann" } },
});

const load = values.load === "wrk" ? wrk : autocannon;

async function run(mode: string) {
  const { configPath, key } = initAppliance({ credit: "1000000" });
  const port = await freePort();
  // `serve`: the appliance itself, from source (every plugin, the checkpointer), for reference.
  const cmd =
    mode === "serve"
      ? [process.execPath, join(ROOT, "src/main.ts"), "serve", "--config", configPath]
      : [process.execPath, join(ROOT, "bench/writer-thread.server.ts"), "--config", configPath, "--port", String(port), "--mode", mode, "--jobs", values.jobs!];
  const proc = spawn(cmd, {
    env: { ...process.env, NODE_ENV: "production", SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn" },
    stdout: "inherit",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`, 60_000);
  const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
  // A warm-up long enough for both threads' code to be compiled (the writer's thread compiles its own copy).
  await load({ url: `${url}/api/public/v1/messages`, method: "POST", headers, body, seconds: 5, connections: Number(values.connections) });
  const c0 = cpuSeconds(proc.pid);
  const t0 = threadCpu(proc.pid);
  const r = await load({
    url: `${url}/api/public/v1/messages`,
    method: "POST",
    headers,
    body,
    seconds: Number(values.seconds),
    connections: Number(values.connections),
  });
  const cpu = cpuPerRequest(c0, cpuSeconds(proc.pid), r.total);
  const t1 = threadCpu(proc.pid);
  const busiest = [...t1]
    .map(([tid, v]) => ({ tid, us: ((v.cpu - (t0.get(tid)?.cpu ?? 0)) * 1e6) / r.total, name: v.name }))
    .sort((a, b) => b.us - a.us)
    .slice(0, 4);
  console.log("  threads:", busiest.map((b) => `${b.name}(${b.tid === proc.pid ? "main" : b.tid}) ${fmt(b.us, 1)}`).join(", "));
  proc.kill("SIGKILL");
  await proc.exited;
  console.log(
    `${mode.padEnd(6)}: ${fmt(r.rps)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  HTTP thread ${fmt(cpu.main, 1)} µs/req  process ${fmt(cpu.process, 1)} µs/req${r.non2xx ? `  (${r.non2xx} not 2xx)` : ""}`,
  );
  return r;
}

async function bare() {
  const b = await bareGroupCommitServer();
  const o = { url: `${b.url}/insert`, method: "POST", headers: { "content-type": "application/json" }, body, connections: Number(values.connections) };
  await load({ ...o, seconds: 2 });
  const c0 = cpuSeconds(b.pid);
  const r = await load({ ...o, seconds: Number(values.seconds) });
  const cpu = cpuPerRequest(c0, cpuSeconds(b.pid), r.total);
  b.stop();
  console.log(`bare  : ${fmt(r.rps)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  process ${fmt(cpu.process, 1)} µs/req`);
  return r.rps;
}

console.log(`load: ${values.load}, ${values.connections} connections, ${values.seconds} s; job loop ${values.jobs}`);
for (let i = 0; i < Number(values.pairs); i++) {
  const b = await bare();
  const ratios: string[] = [];
  for (const mode of values.modes!.split(",")) ratios.push(`${mode} ${fmt((await run(mode)).rps / b, 2)}`);
  console.log(`ratio to bare: ${ratios.join(", ")}`);
}
