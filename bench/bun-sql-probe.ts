/**
 * What Bun's built-in PostgreSQL client (`Bun.SQL`) does under the faults DESIGN §15 names, on the Bun we
 * ship — the checks STACK-NOTES asks for before the PostgreSQL engine moves onto it (issue 35). Prints one
 * line per check with its time; the figures are in bench/RESULTS.md ("Bun.SQL under faults").
 *
 *   npx bun bench/bun-sql-probe.ts
 *
 * Needs Debian's postgresql package (a throwaway server, as the tests use) or SWITCHBOARD_TEST_PG_URL, and
 * node for test/fakes/latency-proxy.mjs (0.25 ms each way; SIGUSR1 black-holes, SIGUSR2 restores).
 */
import { SQL } from "bun";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { postgresServer, stopPostgresServer } from "../test/helpers/postgres";

const PROXY = join(import.meta.dir, "../test/fakes/latency-proxy.mjs");
const base = await postgresServer();
const server = new URL(base);
console.log(`bun ${Bun.version}, server ${server.host}`);

async function check(label: string, run: () => Promise<unknown>): Promise<void> {
  const start = performance.now();
  let outcome: string;
  try {
    await run();
    outcome = "ok";
  } catch (e: any) {
    outcome = `error ${e?.code ?? ""} ${e?.errno ?? ""} ${String(e?.message ?? e).slice(0, 90)}`;
  }
  console.log(`${label.padEnd(46)} ${(performance.now() - start).toFixed(1).padStart(8)} ms  ${outcome}`);
}
const within = <T>(ms: number, p: Promise<T>) =>
  Promise.race([
    p,
    Bun.sleep(ms).then(() => {
      throw Object.assign(new Error(`no answer within ${ms} ms`), { code: "CLIENT_TIMEOUT" });
    }),
  ]);

async function startProxy(port: number) {
  if (!existsSync(PROXY)) throw new Error(`${PROXY} is missing`);
  const proxy = spawn("node", [PROXY, "--listen", `127.0.0.1:${port}`, "--to", server.host, "--delay-ms", "0.25"], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((resolve) => proxy.stdout!.once("data", resolve));
  const url = new URL(base);
  url.port = String(port);
  return { proxy, url: url.toString() };
}

await check(
  "connection refused (connectionTimeout 2 s)",
  () => new SQL({ url: "postgres://postgres@127.0.0.1:1/postgres", max: 1, connectionTimeout: 2 })`select 1`,
);

const sql = new SQL({ url: base, max: 4, connectionTimeout: 3 });
await check("first query", () => sql`select 1`);
const admin = new SQL({ url: base, max: 1 });
await check(
  "pg_terminate_backend of the pool's connections",
  () => admin`select count(pg_terminate_backend(pid)) from pg_stat_activity where pid <> pg_backend_pid() and datname = current_database()`,
);
await check("next query on a terminated connection", () => sql`select 1`);
await check("the one after (new connection)", () => sql`select 1`);

await check("cancel() of a running pg_sleep(5) after 300 ms", () => {
  const q = sql`select pg_sleep(5)`;
  setTimeout(() => q.cancel(), 300);
  return q;
});
await check("the connection after the cancel", () => sql`select 1`);

await sql`create table if not exists probe_lock(id int primary key, v int)`;
await sql`insert into probe_lock values (1, 0) on conflict do nothing`;
const holder = await sql.reserve();
await holder`begin`;
await holder`select * from probe_lock where id = 1 for update`;
const other = new SQL({ url: base, max: 4 });
const waiter = check("an UPDATE waiting 500 ms for a row lock", () => other`update probe_lock set v = v + 1 where id = 1`);
await check("an unrelated query meanwhile", () => other`select 2`);
await Bun.sleep(500);
await holder`commit`;
holder.release();
await waiter;

const { proxy, url: farUrl } = await startProxy(6543);
const far = new SQL({ url: farUrl, max: 4, connectionTimeout: 1 });
await check("query 0.5 ms away", () => far`select 1`);
proxy.kill("SIGUSR1");
await Bun.sleep(50);
let ticks = 0;
const timer = setInterval(() => ticks++, 10);
await check("black hole: query, client bound 1.5 s", () => within(1500, far`select 1`));
clearInterval(timer);
console.log(`${"  event-loop ticks of 10 ms meanwhile".padEnd(46)} ${String(ticks).padStart(8)}`);
await check("black hole: a new pool's first query", () => new SQL({ url: farUrl, max: 1, connectionTimeout: 1 })`select 1`);
proxy.kill("SIGUSR2");
await Bun.sleep(50);
await check("restored: next query", () => far`select 1`);

const one = new SQL({ url: farUrl, max: 1 });
await one`select 1`;
await check("200 queries pipelined on one connection", () => Promise.all(Array.from({ length: 200 }, (_, i) => one`select ${i}::int`)));
await check("50 queries one after another", async () => {
  for (let i = 0; i < 50; i++) await one`select ${i}::int`;
});
await check("a transaction of 20 pipelined statements", () => one.begin((tx) => Promise.all(Array.from({ length: 20 }, (_, i) => tx`select ${i}::int`))));
await check("unnest of an int4[] parameter", () => sql`select * from unnest(${sql.array([1, 2, 3], "int4")}::int4[]) as t(x)`);

proxy.kill("SIGTERM");
await stopPostgresServer();
process.exit(0);
