/**
 * Messaging benchmark (issue 4). Run: `make build && npx bun bench/messages.bench.ts [--seconds 10] [--drain 100000]`
 * (`--seconds 0`: the drain alone).
 * 1. Accepted POST /messages per second on the compiled appliance (sandbox WhatsApp, priced template
 *    sends, 50 connections, autocannon; dispatch and delivered/read reports running) ÷ a bare Elysia route
 *    in a separate Bun process that validates the same body and inserts one row under group commit on a
 *    database opened with the same pragmas (WAL, synchronous=FULL; answered after the commit), same run.
 * 2. Drain rate: N queued sandbox messages dispatched to `sent` by the job loop, in process, at the default
 *    `[jobs] workers` (BENCH_WORKERS overrides it), with the WAL checkpointer on its worker thread as `serve`
 *    runs it (without it SQLite's automatic checkpoints run inside the drain's commits, on its thread).
 */
import { parseArgs } from "node:util";
import { sandboxChannels, createTestApp } from "../test/helpers/test-app";
import { join } from "node:path";
import { startCheckpointer } from "../src/db/checkpointer";
import { sendMessage } from "../src/modules/messages/messages.service";
import { silentLogger } from "../src/platform/logger";
import { appliance, autocannon, bareGroupCommitServer, cpuPerRequest, cpuSeconds, fmt } from "./lib";

const { values } = parseArgs({
  options: { seconds: { type: "string", default: "10" }, connections: { type: "string", default: "50" }, drain: { type: "string", default: "100000" } },
});
const seconds = Number(values.seconds);
const connections = Number(values.connections);
const drainN = Number(values.drain);

// ---- 1. POST /messages vs a bare group-commit insert (the durability ceiling)
// (--seconds 0: the drain alone)
if (seconds > 0) {
  const bare = await bareGroupCommitServer();
  const body = JSON.stringify({
    channel: "whatsapp",
    to: { phone: "+14155550100" },
    type: "template",
    template: { name: "hello_world", params: { "body.1": "Ann" } },
  });
  const headers = { "content-type": "application/json" };
  // NB! The bare route is measured before the appliance starts: the appliance's warm-up leaves a backlog of
  // dispatches and reports that keeps it busy for seconds, and a baseline measured beside that work was
  // ~30 % low (22–23k against 31–32k req/s, three pairs; bench/RESULTS.md "Seventh round").
  let base: Awaited<ReturnType<typeof autocannon>>;
  let baseCpu: ReturnType<typeof cpuPerRequest>;
  try {
    await autocannon({ url: `${bare.url}/insert`, method: "POST", body, headers, seconds: 2, connections });
    const c0 = cpuSeconds(bare.pid);
    base = await autocannon({ url: `${bare.url}/insert`, method: "POST", body, headers, seconds, connections });
    baseCpu = cpuPerRequest(c0, cpuSeconds(bare.pid), base.total);
  } finally {
    bare.stop();
  }
  const sb = await appliance();
  // A large balance: the run must not hit 402.
  Bun.spawnSync([
    `${import.meta.dir}/../dist/switchboard`,
    "balance",
    "credit",
    "--company",
    "default",
    "--amount",
    "1000000",
    "--config",
    `${sb.dir}/config.toml`,
  ]);
  try {
    await autocannon({
      url: `${sb.url}/api/public/v1/messages`,
      method: "POST",
      body,
      headers: { ...headers, authorization: `Bearer ${sb.key}` },
      seconds: 2,
      connections,
    });
    const c0 = cpuSeconds(sb.pid);
    const send = await autocannon({
      url: `${sb.url}/api/public/v1/messages`,
      method: "POST",
      body,
      headers: { ...headers, authorization: `Bearer ${sb.key}` },
      seconds,
      connections,
    });
    const sendCpu = cpuPerRequest(c0, cpuSeconds(sb.pid), send.total);
    if (send.non2xx) console.warn(`warning: ${send.non2xx} non-2xx answers from POST /messages`);
    const cpu = (c: typeof sendCpu) => `CPU per request: main thread ${fmt(c.main, 1)} µs, process ${fmt(c.process, 1)} µs`;
    console.log(`bare route, group commit   : ${fmt(base.rps)} req/s  p50 ${base.p50} ms  p99 ${base.p99} ms  (${cpu(baseCpu)})`);
    console.log(`POST /messages (priced)   : ${fmt(send.rps)} req/s  p50 ${send.p50} ms  p99 ${send.p99} ms  (${cpu(sendCpu)})`);
    console.log(
      `ratio send ÷ bare         : ${fmt(send.rps / base.rps, 2)} (target ≥ 0.5, p99 < 10 ms); main-thread CPU per request bare ÷ send ${fmt(baseCpu.main / sendCpu.main, 2)}`,
    );
  } finally {
    await sb.stop();
  }
}

// ---- 2. drain rate
// BENCH_WORKERS sets [jobs] workers; without it the default of the config applies.
const jobs = process.env.BENCH_WORKERS ? { jobs: { workers: Number(process.env.BENCH_WORKERS) } } : {};
const app = await createTestApp({
  balance: "1000000",
  recordEvents: false,
  config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 3_600_000, read_after_ms: 0 }), ...jobs },
});
const checkpointer = startCheckpointer({ db: app.deps.db, path: join(app.dir, "switchboard.db"), log: silentLogger });
try {
  const t0 = performance.now();
  for (let done = 0; done < drainN; ) {
    const batch = Math.min(1000, drainN - done);
    await app.deps.db.unit(async () => {
      for (let i = 0; i < batch; i++)
        await sendMessage(app.deps, {
          companyId: app.company.id,
          apiKeyId: null,
          input: {
            channel: "whatsapp",
            to: { phone: `+1415${String(5_000_000 + ((done + i) % 5000)).padStart(7, "0")}` },
            type: "template",
            template: { name: "hello_world", params: { "body.1": "x" } },
          },
        });
    });
    done += batch;
  }
  const queuedMs = performance.now() - t0;
  const t1 = performance.now();
  await app.deps.queue.drain({ timeoutMs: 600_000 });
  const drainMs = performance.now() - t1;
  const sent = (app.deps.db.$client.query("SELECT count(*) AS n FROM messages WHERE status = 'sent'").get() as { n: number }).n;
  console.log(`queued ${fmt(drainN)} messages in ${fmt(queuedMs / 1000, 1)} s (in-process sendMessage, 1,000 per transaction)`);
  console.log(
    `drained to sent: ${fmt(sent)} in ${fmt(drainMs / 1000, 1)} s = ${fmt(sent / (drainMs / 1000))} messages/s with ${app.config.jobs.workers} workers (target ≥ 10,000/s)`,
  );
} finally {
  checkpointer.stop();
  await app.close();
}
