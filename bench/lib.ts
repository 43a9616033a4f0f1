/** Shared benchmark helpers: autocannon in its own Node process, servers to compare, formatting. */
import { spawn } from "bun";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "..");
/** The appliance under test; SWITCHBOARD_BENCH_BINARY runs another (e.g. a wrapper that profiles from source). */
export const BINARY = process.env.SWITCHBOARD_BENCH_BINARY ?? join(ROOT, "dist/switchboard");
export const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  total: number;
}

/** A load: what to request, how long, with how many connections at once. */
export interface LoadSpec {
  url: string;
  seconds: number;
  connections: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** Runs autocannon (a separate Node process, so the load generator never shares the server's loop). */
export async function autocannon(
  opts: LoadSpec & {
    /** A POST /messages body's `to.phone` walks this many numbers (autocannon-phones.cjs) instead of one. */
    phones?: number;
  },
): Promise<LoadResult> {
  let args: string[];
  if (opts.phones) {
    const { url, seconds, connections, method = "GET", headers, body, phones } = opts;
    args = [join(ROOT, "bench/autocannon-phones.cjs"), JSON.stringify({ url, duration: seconds, connections, method, headers, body, phones })];
  } else {
    args = [
      join(ROOT, "node_modules/autocannon/autocannon.js"),
      "--json",
      "-d",
      String(opts.seconds),
      "-c",
      String(opts.connections),
      "-m",
      opts.method ?? "GET",
    ];
    for (const [k, v] of Object.entries(opts.headers ?? {})) args.push("-H", `${k}=${v}`);
    if (opts.body) args.push("-b", opts.body);
    args.push(opts.url);
  }
  const proc = spawn(["node", ...args], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const r = JSON.parse(out);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, total: r.requests.total };
}

/** A directory of its own under the system's temp dir, removed when the benchmark exits (a 1M run leaves ~1 GB). */
export function tempDir(prefix = "sb-bench-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
const made: string[] = [];
process.on("exit", () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

export async function waitFor(url: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {}
    if (Date.now() > end) throw new Error(`timeout waiting for ${url}`);
    await Bun.sleep(5);
  }
}

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
}

export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

let clockTicks = 0;
/** A thread's or process's CPU seconds (user + system) and name, from its /proc stat file. */
function statCpu(path: string): { cpu: number; name: string } {
  clockTicks ||= Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;
  const stat = readFileSync(path, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // from field 3 (state) on
  // fields 14 (utime) and 15 (stime)
  return { cpu: (Number(fields[11]) + Number(fields[12])) / clockTicks, name: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) };
}

/**
 * CPU seconds a process has used so far (user + system, from /proc): all its threads, and its main thread
 * alone — the thread that serves HTTP, runs the job loop and commits, whose time bounds the request rate.
 * Unlike req/s it leaves out time a thread waited for a core: compare the CPU per request of two builds too.
 */
export function cpuSeconds(pid: number): { process: number; main: number } {
  return { process: statCpu(`/proc/${pid}/stat`).cpu, main: statCpu(`/proc/${pid}/task/${pid}/stat`).cpu };
}

/** CPU seconds each thread of a process has used so far, with the thread's name (a Worker's is "Worker"). */
export function threadCpu(pid: number): Map<number, { cpu: number; name: string }> {
  return new Map(readdirSync(`/proc/${pid}/task`).map((tid) => [Number(tid), statCpu(`/proc/${pid}/task/${tid}/stat`)]));
}

/** µs of CPU per request between two `cpuSeconds` readings: main thread and whole process. */
export function cpuPerRequest(
  before: { process: number; main: number },
  after: { process: number; main: number },
  requests: number,
): { main: number; process: number } {
  return { main: ((after.main - before.main) * 1e6) / requests, process: ((after.process - before.process) * 1e6) / requests };
}

/** Starts `bun <script>` serving a baseline route on a free port; returns its URL, pid and a stop function. */
export async function baselineServer(source: string): Promise<{ url: string; pid: number; stop: () => void }> {
  const port = await freePort();
  const dir = tempDir("sb-baseline-");
  const file = join(dir, "baseline.ts");
  await Bun.write(file, source.replaceAll("__PORT__", String(port)).replaceAll("__DIR__", dir).replaceAll("__ROOT__", ROOT));
  const proc = spawn([process.execPath, file], { cwd: ROOT, stdout: "inherit", stderr: "inherit", env: { ...process.env, NODE_ENV: "production" } });
  await waitFor(`http://127.0.0.1:${port}/healthz`);
  return { url: `http://127.0.0.1:${port}`, pid: proc.pid, stop: () => proc.kill() };
}

/**
 * A fresh `init` of the compiled appliance in a temp dir, with a key whose bucket never empties (a benchmark
 * measures the stack, not the rate limiter's 429s) and, if asked, a credit on the default company's balance.
 */
export function initAppliance({ credit }: { credit?: string } = {}): { dir: string; configPath: string; dataDir: string; companyId: string; key: string } {
  const dir = tempDir();
  const init = JSON.parse(Bun.spawnSync([BINARY, "init", "--dir", dir, "--json"]).stdout.toString()) as {
    configPath: string;
    dataDir: string;
    companyId: string;
  };
  if (credit) Bun.spawnSync([BINARY, "balance", "credit", "--company", "default", "--amount", credit, "--config", init.configPath]);
  const k = Bun.spawnSync([
    BINARY,
    "keys",
    "create",
    "--company",
    "default",
    "--name",
    "bench",
    "--rate-limit",
    "10000000",
    "--json",
    "--config",
    init.configPath,
  ]);
  return { dir, ...init, key: JSON.parse(k.stdout.toString()).key as string };
}

/** Starts the compiled appliance from a fresh `init`; returns URL, key, pid, time to first /healthz. */
export async function appliance(
  env: Record<string, string> = {},
): Promise<{ url: string; key: string; pid: number; startMs: number; dir: string; stop: () => Promise<void> }> {
  const { dir, configPath, key: apiKey } = initAppliance();
  const port = await freePort();
  const t0 = performance.now();
  const proc = spawn([BINARY, "serve", "--config", configPath], {
    env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn", ...env },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`);
  const startMs = performance.now() - t0;
  return {
    url,
    key: apiKey,
    pid: proc.pid,
    startMs,
    dir,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/**
 * The send path's yardstick (issue 40): a bare Elysia route that validates a POST /messages body and inserts
 * one row, group-committed as the appliance commits (one synchronous=FULL COMMIT per event-loop turn, each
 * request answered after it). POST /messages ÷ this route is the ratio bench/RESULTS.md tracks.
 */
export function bareGroupCommitServer(): ReturnType<typeof baselineServer> {
  return baselineServer(`
  process.env.NODE_ENV = "production";
  import { Elysia, t } from "__ROOT__/node_modules/elysia";
  import { fullGroupCommit } from "__ROOT__/bench/full-group-commit";
  const db = fullGroupCommit("__DIR__/bare.db");
  db.sqlite.exec("CREATE TABLE m (id TEXT PRIMARY KEY, body TEXT NOT NULL, created_at INTEGER NOT NULL)");
  const insert = db.sqlite.prepare("INSERT INTO m VALUES (?, ?, ?)");
  new Elysia()
    .get("/healthz", () => "ok")
    .post("/insert", async ({ body, set }) => { const id = Bun.randomUUIDv7(); await db.batch(() => insert.run(id, JSON.stringify(body), Date.now())); set.status = 202; return { data: { id } }; },
      { body: t.Object({ channel: t.String(), to: t.Object({ phone: t.String() }), type: t.String(), template: t.Object({ name: t.String(), params: t.Record(t.String(), t.String()) }) }) })
    .listen({ port: __PORT__, hostname: "127.0.0.1" });
  `);
}

/**
 * wrk (Debian's package) with one thread, as autocannon's stand-in where it is installed: it takes a fraction
 * of the CPU a request that autocannon's Node process takes, so on a 2-core box the server under test keeps
 * most of the second core. Same result shape as autocannon.
 */
export async function wrk(o: LoadSpec): Promise<LoadResult> {
  const script = join(tempDir("sb-wrk-"), "request.lua");
  const lines = [`wrk.method = ${JSON.stringify(o.method ?? "GET")}`];
  if (o.body) lines.push(`wrk.body = ${JSON.stringify(o.body)}`);
  for (const [k, v] of Object.entries(o.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  await Bun.write(script, lines.join("\n") + "\n");
  const proc = spawn(["wrk", "-t1", `-c${o.connections}`, `-d${o.seconds}s`, "--latency", "-s", script, o.url], { stdout: "pipe", stderr: "inherit" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const ms = (pct: string) => {
    const m = new RegExp(`\\s${pct}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
    if (!m) throw new Error(`wrk printed no ${pct}th percentile:\n${out}`);
    return Number(m[1]) * (m[2] === "us" ? 0.001 : m[2] === "s" ? 1000 : 1);
  };
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)![1]),
    p50: ms("50"),
    p99: ms("99"),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    total: Number(/(\d+) requests in/.exec(out)![1]),
  };
}
