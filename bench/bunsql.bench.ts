/**
 * The synchronous libpq engine against the Bun.SQL pool (src/db/postgres/bunsql.ts), on loopback and 0.5 ms
 * away (test/fakes/latency-proxy.mjs, 0.25 ms each way): single-row INSERT + SELECT pairs per second,
 * (a) libpq, one caller (it blocks the thread: one is all it can serve), (b) the pool with 8 concurrent callers,
 * (c) the pool with one caller (its latency). Figures in bench/RESULTS.md ("Bun.SQL pool against libpq").
 *
 *   ./node_modules/.bin/bun bench/bunsql.bench.ts [--seconds 3] [--rounds 2] [--durable]
 *
 * A throwaway PostgreSQL (test/helpers/postgres.ts) with fsync off unless --durable: the subject is round trips
 * and the client, not the disk (with fsync on, eight callers also share the server's group commit).
 */
import { parseArgs } from "node:util";
import { loadavg } from "node:os";
import { spawn } from "node:child_process";
import { join } from "node:path";

const { values: args } = parseArgs({
  options: { seconds: { type: "string", default: "3" }, rounds: { type: "string", default: "2" }, durable: { type: "boolean", default: false } },
});
if (args.durable) process.env.SWITCHBOARD_TEST_PG_DURABLE = "1";
const { openPostgres } = await import("../src/db/client");
const { openPgPool } = await import("../src/db/postgres/bunsql");
const { freePort, freshPostgresDatabase, stopPostgresServer } = await import("../test/helpers/postgres");

const SECONDS = Number(args.seconds);
const CALLERS = 8;

function findProxy(): string {
  return join(import.meta.dir, "../test/fakes/latency-proxy.mjs");
}

const url = await freshPostgresDatabase("sb_bench");
const port = await freePort();
const proxy = spawn("node", [findProxy(), "--listen", `127.0.0.1:${port}`, "--to", new URL(url).host, "--delay-ms", "0.25"], {
  stdio: ["ignore", "pipe", "inherit"],
});
await new Promise((resolve) => proxy.stdout!.once("data", resolve));
const far = new URL(url);
far.port = String(port);

const setup = openPostgres(url);
setup.$client.exec("CREATE TABLE bench (id bigint PRIMARY KEY, v text NOT NULL)");
setup.close();

const INSERT = "INSERT INTO bench (id, v) VALUES (?, ?)";
const SELECT = "SELECT id, v FROM bench WHERE id = ?";
let nextId = 0;

/** Pairs per second and the process's CPU µs per pair (less sensitive to a loaded machine than the rate). */
interface Rate {
  perSecond: number;
  cpuUs: number;
}
const measured = (pairs: number, cpu: NodeJS.CpuUsage): Rate => ({ perSecond: pairs / SECONDS, cpuUs: (cpu.user + cpu.system) / pairs });

function libpq(at: string): Rate {
  const db = openPostgres(at);
  const insert = db.$client.query(INSERT);
  const select = db.$client.query(SELECT);
  let pairs = 0;
  const cpu = process.cpuUsage();
  const until = performance.now() + SECONDS * 1000;
  while (performance.now() < until) {
    const id = ++nextId;
    insert.run(id, "x");
    if ((select.get(id) as { id: number }).id !== id) throw new Error("wrong row");
    pairs++;
  }
  const used = process.cpuUsage(cpu);
  db.close();
  return measured(pairs, used);
}

async function pool(at: string, callers: number): Promise<Rate> {
  const p = openPgPool(at, { poolSize: callers });
  await p.ping();
  let pairs = 0;
  const cpu = process.cpuUsage();
  const until = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < until) {
        const id = ++nextId;
        await p.run(INSERT, [id, "x"]);
        if ((await p.get(SELECT, [id]))?.id !== id) throw new Error("wrong row");
        pairs++;
      }
    }),
  );
  const used = process.cpuUsage(cpu);
  await p.close();
  return measured(pairs, used);
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
console.log(`bun ${Bun.version}; ${SECONDS} s per case; fsync ${args.durable ? "on" : "off"}; INSERT + SELECT pairs per second`);
for (let round = 1; round <= Number(args.rounds); round++) {
  for (const [where, at] of [
    ["loopback", url],
    ["0.5 ms away", far.toString()],
  ] as const) {
    const a = libpq(at);
    const b = await pool(at, CALLERS);
    const c = await pool(at, 1);
    const show = (r: Rate) => `${fmt(r.perSecond).padStart(6)}/s ${fmt(r.cpuUs).padStart(4)} µs CPU (${(r.perSecond / a.perSecond).toFixed(2)}×)`;
    console.log(`round ${round} ${where.padEnd(12)} libpq ${show(a)}  pool×${CALLERS} ${show(b)}  pool×1 ${show(c)}  [load ${loadavg()[0]!.toFixed(1)}]`);
  }
}
proxy.kill("SIGTERM");
await stopPostgresServer();
process.exit(0);
