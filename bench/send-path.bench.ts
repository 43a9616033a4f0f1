/**
 * The send path in process, stage by stage (issue 19). Run: `npx bun bench/send-path.bench.ts [--messages 20000]`
 * (add `--cpu-prof` to bun for a profile of the same run; `--accept-only` stops after the accept stage;
 * BENCH_MARKS=1 prints when each measured stage starts and ends, to cut the profile by time).
 *
 * No HTTP and no load generator. Each stage prints wall µs per message and, in brackets, CPU µs per message
 * of the whole process (process.cpuUsage: every thread, user + system): on a busy machine the wall figure
 * grows with the other load, the CPU figure much less, so compare CPU figures across runs. Requests go through `app.handle` 50 at a time (they share group commits, as
 * under load). Stages:
 *   bare     an Elysia route that validates the same body and inserts one row under group commit
 *   accept   POST /messages (guard, validation, idempotency-free priced template send, 202)
 *   dispatch the queue taking every message to the sandbox and recording `sent`
 *   reports  the sandbox's delivered and read reports (two per message)
 */
import { parseArgs } from "node:util";
import { Elysia, t } from "elysia";
import { createTestApp } from "../test/helpers/test-app";
import { fullGroupCommit } from "./full-group-commit";
import { fmt, tempDir } from "./lib";

const { values } = parseArgs({ options: { messages: { type: "string", default: "20000" }, "accept-only": { type: "boolean", default: false } } });
const N = Number(values.messages);
const INFLIGHT = 50;
const body = JSON.stringify({
  channel: "whatsapp",
  to: { phone: "+14155550100" },
  type: "template",
  template: { name: "hello_world", params: { "body.1": "Ann" } },
});

const cpu: Record<string, number> = {};
function cpuSince(start: NodeJS.CpuUsage, messages: number): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / messages;
}

async function run(handle: (r: Request) => Promise<Response>, url: string, headers: Record<string, string>, stage?: string): Promise<number> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let done = 0; done < N; done += INFLIGHT) {
    const answers = await Promise.all(Array.from({ length: Math.min(INFLIGHT, N - done) }, () => handle(new Request(url, { method: "POST", headers, body }))));
    for (const a of answers) if (a.status !== 202) throw new Error(`${a.status}: ${await a.text()}`);
  }
  if (stage) cpu[stage] = cpuSince(c0, N);
  return ((performance.now() - t0) * 1000) / N;
}

// ---- bare: validation + one INSERT under group commit
const dir = tempDir("sb-sendpath-");
const bareDb = fullGroupCommit(`${dir}/bare.db`);
bareDb.sqlite.exec("CREATE TABLE m (id TEXT PRIMARY KEY, body TEXT NOT NULL, created_at INTEGER NOT NULL)");
const insert = bareDb.sqlite.prepare("INSERT INTO m VALUES (?, ?, ?)");
const bare = new Elysia().post(
  "/insert",
  async ({ body, set }) => {
    const id = Bun.randomUUIDv7();
    await bareDb.batch(() => insert.run(id, JSON.stringify(body), Date.now()));
    set.status = 202;
    return { data: { id } };
  },
  {
    body: t.Object({
      channel: t.String(),
      to: t.Object({ phone: t.String() }),
      type: t.String(),
      template: t.Object({ name: t.String(), params: t.Record(t.String(), t.String()) }),
    }),
  },
);
await run((r) => bare.handle(r), "http://localhost/insert", { "content-type": "application/json" }); // warm-up
const bareUs = await run((r) => bare.handle(r), "http://localhost/insert", { "content-type": "application/json" }, "bare");
bareDb.sqlite.close();

// ---- the appliance
const app = await createTestApp({ balance: "1000000", recordEvents: false });
// A key whose bucket never empties: the bench measures the stack, not the rate limiter's 429s.
const { key } = await app.newKey({ name: "bench", rateLimit: 10_000_000 });
const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
const url = "http://localhost/api/public/v1/messages";
await run((r) => app.app.handle(r), url, headers); // warm-up (its messages are dispatched and reported below too)
if (process.env.BENCH_MARKS) console.error(`accept from ${Math.round(performance.now())} ms`);
// PostgreSQL: statements sent per message in each stage (the pool's count; SQLite has none to count).
const pool = (app.deps.db as { pool?: { statements: number } }).pool;
const perStage: Record<string, number> = {};
let s0 = pool?.statements ?? 0;
const counted = (stage: string, messages: number) => {
  if (!pool) return;
  perStage[stage] = (pool.statements - s0) / messages;
  s0 = pool.statements;
};
const acceptUs = await run((r) => app.app.handle(r), url, headers, "accept");
counted("accept", N);
if (process.env.BENCH_MARKS) console.error(`accept to ${Math.round(performance.now())} ms`);
if (values["accept-only"]) {
  console.log(
    `bare route ${fmt(bareUs, 1)} [${fmt(cpu.bare!, 1)}] µs, accept ${fmt(acceptUs, 1)} [${fmt(cpu.accept!, 1)}] µs per message (bare ÷ accept = ${fmt(bareUs / acceptUs, 2)})`,
  );
  await app.close();
  process.exit(0);
}
const total = N * 2;
let c0 = process.cpuUsage();
let t0 = performance.now();
if (process.env.BENCH_MARKS) console.error(`dispatch from ${Math.round(t0)} ms`);
await app.deps.queue.drain({ timeoutMs: 600_000 }); // dispatch; the reports are not due on the manual clock
if (process.env.BENCH_MARKS) console.error(`dispatch to ${Math.round(performance.now())} ms`);
const dispatchUs = ((performance.now() - t0) * 1000) / total;
cpu.dispatch = cpuSince(c0, total);
counted("dispatch", total);
app.clock.advance(3_600_000 + 25); // the sandbox reports an hour later, due on a 25 ms step
c0 = process.cpuUsage();
t0 = performance.now();
await app.deps.queue.drain({ timeoutMs: 600_000 });
const reportsUs = ((performance.now() - t0) * 1000) / total;
cpu.reports = cpuSince(c0, total);
counted("reports", total);
const read = Number(((await app.deps.db.sql(`SELECT count(*) AS n FROM messages WHERE status = 'read'`).get()) as { n: number }).n);
await app.close();
if (read !== total) throw new Error(`${read} of ${total} messages reached read`);

if (pool)
  console.log(
    `PostgreSQL statements per message: ${Object.entries(perStage)
      .map(([k, v]) => `${k} ${fmt(v, 1)}`)
      .join(", ")}`,
  );
const all = acceptUs + dispatchUs + reportsUs;
const allCpu = cpu.accept! + cpu.dispatch + cpu.reports;
console.log(`wall µs [CPU µs] per message, ${fmt(N)} messages, ${INFLIGHT} in flight (in process, no HTTP)`);
console.log(`bare route (validate + 1 insert, group commit) : ${fmt(bareUs, 1)} [${fmt(cpu.bare!, 1)}]`);
console.log(`accept  POST /messages → 202                   : ${fmt(acceptUs, 1)} [${fmt(cpu.accept!, 1)}]`);
console.log(`dispatch to the sandbox, record sent           : ${fmt(dispatchUs, 1)} [${fmt(cpu.dispatch, 1)}]`);
console.log(`delivered + read reports                       : ${fmt(reportsUs, 1)} [${fmt(cpu.reports, 1)}]`);
console.log(
  `whole life of a message                        : ${fmt(all, 1)} [${fmt(allCpu, 1)}]  (bare ÷ whole = ${fmt(bareUs / all, 2)}; bare ÷ accept = ${fmt(bareUs / acceptUs, 2)})`,
);
// (On PostgreSQL the throwaway server the test helper started stays referenced until the process exits.)
process.exit(0);
