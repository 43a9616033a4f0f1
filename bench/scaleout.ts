/**
 * Scale-out on PostgreSQL (issue 35's table), on the compiled binary. Run:
 * `./node_modules/.bin/bun bench/scaleout.ts [--seconds 10] [--contacts N] [--proxy-wait spin|sleep] [--pin] [--remote-url
 * postgres://…] [--only sqlite,pg,pg8,remote1,remote2,lock,blackhole,nolibpq]` (--pin and --remote-url: below).
 * PostgreSQL: Debian's server, a throwaway cluster on loopback with its durable defaults (test/helpers/postgres.ts);
 * "remote": the same server behind test/fakes/latency-proxy.mjs, 0.25 ms each way (0.5 ms round trip); it spins
 * while anything is in flight (most of one of the box's cores), unless `--proxy-wait sleep` (its sleeping variant).
 * Every measurement on a fresh database; POST /messages is a priced template send to a known contact (`--contacts
 * N`: to N contacts in turn, created by the first sends — the hot rows are then the company's balance alone).
 *   sqlite    accepted POST /messages/s, SQLite appliance, 50 connections
 *   pg        the same, one instance on loopback PostgreSQL            ÷ sqlite   (goal ≥ 0.25)
 *   pg8       one instance on loopback PostgreSQL, 8 connections (not a goal's row: remote1's like for like)
 *   remote1   one instance, PostgreSQL 0.5 ms away, 8 connections      ÷ pg       (goal ≥ 0.5; and ÷ pg8)
 *   remote2   two instances, 0.5 ms away, 8 connections each (summed)  ÷ remote1  (goal ≥ 1.7)
 *   lock      another session holds LOCK TABLE messages IN ACCESS EXCLUSIVE MODE for 3 s while sends run:
 *             the slowest GET /healthz and GET /me meanwhile (goal < 100 ms)
 *   blackhole the proxy stops forwarding: does /healthz answer, what do sends get within 15 s, does the
 *             instance recover by itself once forwarding resumes (goal: 503s, /healthz at once, recovers)
 *   nolibpq   the binary served on PostgreSQL in a mount namespace where the host's libpq is /dev/null
 * Each throughput row also prints where the box's CPU went in it (cpuByRole).
 */
process.env.SWITCHBOARD_TEST_PG_DURABLE = "1";
import { spawn, spawnSync, SQL } from "bun";
import { readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { freshPostgresDatabase, postgresAvailable, POSTGRES_SKIP_REASON } from "../test/helpers/postgres";
import { autocannon, BINARY, cpuSeconds, fmt, freePort, type LoadResult, ROOT, tempDir } from "./lib";

const ALL = ["sqlite", "pg", "pg8", "remote1", "remote2", "lock", "blackhole", "nolibpq"];
const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    only: { type: "string", default: ALL.join(",") },
    contacts: { type: "string", default: "1" },
    "proxy-wait": { type: "string", default: "spin" },
    pin: { type: "boolean", default: false },
    "remote-url": { type: "string" },
  },
});
/** The throughput rows' sends go to this many contacts, in turn (1: every send to the same one, the issue's table). */
const CONTACTS = Number(values.contacts);
const SECONDS = Number(values.seconds);
const ONLY = new Set(values.only.split(","));
/**
 * `--pin`: two hosts on one box (not the goal's setting) — the instances and the load generators (this process
 * and what it starts) on core 0, PostgreSQL and the latency proxy on core 1, so neither side takes the other's CPU.
 */
const PIN = values.pin;
const pinTo = (core: number, pid: number) => {
  const r = spawnSync(["taskset", "-a", "-p", "-c", String(core), String(pid)]);
  if (r.exitCode !== 0) throw new Error(`taskset ${pid}: ${r.stderr.toString()}`);
};
const pinPostgres = () => {
  for (const d of readdirSync("/proc").filter((x) => /^\d+$/.test(x)))
    try {
      if (readFileSync(`/proc/${d}/comm`, "utf8").trim() === "postgres") pinTo(1, Number(d)); // (backends forked later inherit it)
    } catch {}
};
if (PIN) pinTo(0, process.pid);
/**
 * `--remote-url postgres://user@db-host/postgres`: the remote rows on a PostgreSQL server on another host — a
 * real network, no proxy — where these may create databases; the goal's two hosts, where this box has one.
 */
const REMOTE_URL = values["remote-url"];
const AWAY = REMOTE_URL ? `on ${new URL(REMOTE_URL).hostname}` : "0.5 ms away";
if (!postgresAvailable()) throw new Error(POSTGRES_SKIP_REASON);
// A copy of the workplace's shared/tools/latency-proxy.mjs is kept in test/fakes (the fault tests use it too).
const PROXY_PATH = process.env.SWITCHBOARD_LATENCY_PROXY ?? join(ROOT, "test/fakes/latency-proxy.mjs");

interface Appliance {
  configPath: string;
  key: string;
  pgUrl?: string;
}
const cli = (args: string[], env: Record<string, string> = {}) => {
  const r = spawnSync([BINARY, ...args], { env: { ...process.env, ...env } });
  if (r.exitCode !== 0) throw new Error(`switchboard ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
};

/**
 * A fresh appliance; on PostgreSQL its config reads the URL from SWITCHBOARD_BENCH_PG_URL (so each instance may go
 * through a proxy), its database made on the test server or on the server at `server`.
 */
async function fresh(engine: "sqlite" | "postgres", server?: string): Promise<Appliance> {
  const init = JSON.parse(cli(["init", "--dir", tempDir(), "--json"])) as { configPath: string };
  let toml = readFileSync(init.configPath, "utf8").replace(
    'channel = "whatsapp"\nprovider = "sandbox"\nname = "WhatsApp (sandbox)"\ndefault = true\n',
    (m) => `${m}[channels.settings]\nsent_after_ms = 0\n`,
  );
  let env: Record<string, string> = {};
  let pgUrl: string | undefined;
  if (engine === "postgres") {
    pgUrl = await freshPostgresDatabase("sb_scaleout", server);
    env = { SWITCHBOARD_BENCH_PG_URL: pgUrl };
    toml = toml.replace('[storage]\ndata_dir = "./data"', '[storage]\ndata_dir = "./data"\ndriver = "postgres"\nurl = "env:SWITCHBOARD_BENCH_PG_URL"');
    if (!toml.includes('driver = "postgres"')) throw new Error("could not point the config at PostgreSQL");
  }
  writeFileSync(init.configPath, toml);
  if (engine === "postgres") {
    cli(["migrate", "--config", init.configPath], env);
    cli(["companies", "create", "--slug", "default", "--name", "Default", "--config", init.configPath], env);
  }
  cli(["balance", "credit", "--company", "default", "--amount", "1000000", "--config", init.configPath], env);
  const key = JSON.parse(
    cli(["keys", "create", "--company", "default", "--name", "bench", "--rate-limit", "10000000", "--json", "--config", init.configPath], env),
  ).key as string;
  return { configPath: init.configPath, key, pgUrl };
}

interface Instance {
  url: string;
  proc: ReturnType<typeof spawn>;
  stderr: () => string;
  stop: () => Promise<void>;
}
/** Serves `a`, on PostgreSQL at `pgUrl` (default: its own, loopback); `wrap` prefixes the command (unshare). */
async function serve(a: Appliance, opts: { pgUrl?: string; wrap?: string[]; timeoutMs?: number } = {}): Promise<Instance> {
  const port = await freePort();
  const proc = spawn([...(opts.wrap ?? []), BINARY, "serve", "--config", a.configPath], {
    env: {
      ...process.env,
      SWITCHBOARD_LISTEN: `127.0.0.1:${port}`,
      SWITCHBOARD_LOG_LEVEL: "warn",
      ...(a.pgUrl ? { SWITCHBOARD_BENCH_PG_URL: opts.pgUrl ?? a.pgUrl } : {}),
    },
    stdout: "ignore",
    stderr: "pipe",
  });
  let err = "";
  void (async () => {
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) err += new TextDecoder().decode(chunk);
  })();
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    proc.kill("SIGTERM");
    const t = setTimeout(() => proc.kill("SIGKILL"), 5000); // a frozen instance does not handle SIGTERM
    await proc.exited;
    clearTimeout(t);
  };
  const end = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })).ok) break;
    } catch {}
    if (proc.exitCode !== null || Date.now() > end) {
      await stop();
      throw new Error(`serve did not answer /healthz (exit ${proc.exitCode}): ${err.trim().split("\n").slice(0, 3).join(" | ")}`);
    }
    await Bun.sleep(20);
  }
  return { url, proc, stderr: () => err, stop };
}

/** The latency proxy in front of the PostgreSQL at `pgUrl`; returns the URL through it. */
async function proxy(pgUrl: string): Promise<{ url: string; pid: number; blackhole: () => void; restore: () => void; stop: () => void }> {
  const target = new URL(pgUrl);
  const port = await freePort();
  const proc = spawn(
    ["node", PROXY_PATH, "--listen", `127.0.0.1:${port}`, "--to", `${target.hostname}:${target.port}`, "--delay-ms", "0.25", "--wait", values["proxy-wait"]],
    {
      stdout: "pipe",
      stderr: "inherit",
    },
  );
  if (PIN) pinTo(1, proc.pid);
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let out = "";
  while (!out.includes("ready")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("latency proxy exited");
    out += new TextDecoder().decode(value);
  }
  const url = new URL(pgUrl);
  url.port = String(port);
  return { url: url.toString(), pid: proc.pid, blackhole: () => proc.kill("SIGUSR1"), restore: () => proc.kill("SIGUSR2"), stop: () => proc.kill("SIGTERM") };
}

const SEND = JSON.stringify({
  channel: "whatsapp",
  to: { phone: "+14155550100" },
  type: "template",
  template: { name: "hello_world", params: { "body.1": "Ann" } },
});
const post = (url: string, key: string, seconds: number, connections: number) =>
  autocannon({
    url: `${url}/api/public/v1/messages`,
    method: "POST",
    body: SEND,
    headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
    seconds,
    connections,
    phones: CONTACTS > 1 ? CONTACTS : undefined,
  });
/** One POST /messages with a client deadline: its status and time, or status 0 when no answer came. */
async function sendOnce(url: string, key: string, deadlineMs: number): Promise<{ status: number; ms: number; retryAfter: string | null }> {
  const t = performance.now();
  try {
    const r = await fetch(`${url}/api/public/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: SEND,
      signal: AbortSignal.timeout(deadlineMs),
    });
    await r.arrayBuffer();
    return { status: r.status, ms: performance.now() - t, retryAfter: r.headers.get("retry-after") };
  } catch {
    return { status: 0, ms: performance.now() - t, retryAfter: null };
  }
}
async function timedGet(url: string, deadlineMs: number, headers: Record<string, string> = {}): Promise<{ status: number; ms: number }> {
  const t = performance.now();
  try {
    const r = await fetch(url, { headers, signal: AbortSignal.timeout(deadlineMs) });
    await r.arrayBuffer();
    return { status: r.status, ms: performance.now() - t };
  } catch {
    return { status: 0, ms: performance.now() - t };
  }
}

/**
 * Where the box's CPU goes during a measurement: CPU seconds so far of the instances, of PostgreSQL (every
 * process named postgres), of the latency proxy and of the load generators (autocannon), and the box's idle
 * time (/proc/stat). Each row prints the difference of two readings taken inside its measurement window, so the
 * goal rows say whether the box itself was the limit (no idle left) and what took it.
 */
function cpuByRole(instancePids: number[], proxyPid?: number) {
  const pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d));
  const cpuOf = (pid: number) => {
    try {
      return cpuSeconds(pid).process;
    } catch {
      return 0; // (it ended meanwhile)
    }
  };
  const named = (test: (comm: string, cmdline: string) => boolean) =>
    pids.reduce((t, d) => {
      try {
        const comm = readFileSync(`/proc/${d}/comm`, "utf8").trim();
        return test(comm, readFileSync(`/proc/${d}/cmdline`, "utf8")) ? t + cpuOf(Number(d)) : t;
      } catch {
        return t;
      }
    }, 0);
  const ticks = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  return {
    instances: instancePids.reduce((t, p) => t + cpuOf(p), 0),
    postgres: named((comm) => comm === "postgres"),
    proxy: proxyPid ? cpuOf(proxyPid) : 0,
    load: named((_, cmdline) => cmdline.includes("autocannon")),
    idle: ((ticks[3] ?? 0) + (ticks[4] ?? 0)) / 100 / availableParallelism(), // (USER_HZ: 100 on Linux)
    at: performance.now() / 1000,
  };
}
type CpuReading = ReturnType<typeof cpuByRole>;
const cpuLine = (a: CpuReading, b: CpuReading) => {
  const pct = (x: number, y: number) => Math.round(((y - x) / (b.at - a.at)) * 100);
  const roles = [
    ["instances", pct(a.instances, b.instances)],
    ["postgres", pct(a.postgres, b.postgres)],
    ...(b.proxy ? [["proxy", pct(a.proxy, b.proxy)]] : []),
    ["load", pct(a.load, b.load)],
  ];
  return `  CPU, % of one core (${availableParallelism()} on the box): ${roles.map(([n, v]) => `${n} ${v}`).join(", ")}; the box idle ${pct(a.idle, b.idle)} %`;
};

const summary: string[] = [];
const report = (line: string) => {
  console.log(line);
  summary.push(line);
};
const load = (r: LoadResult) => `${fmt(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms${r.non2xx ? `, ${fmt(r.non2xx)} non-2xx` : ""}`;
const ratio = (name: string, num: LoadResult | undefined, den: LoadResult | undefined, goal: number, denName: string) =>
  num && den
    ? `  ${name}: ${fmt(num.rps / den.rps, 2)} (goal ≥ ${goal}; ${(num.rps / den.rps / goal).toFixed(2)} of the goal)`
    : `  ${name}: no ratio (run --only ${denName} too)`;
const results: Record<string, LoadResult> = {};

async function throughput(name: string, engine: "sqlite" | "postgres", instances: number, connections: number, remote: boolean): Promise<LoadResult> {
  const a = await fresh(engine, remote ? REMOTE_URL : undefined);
  if (PIN) pinPostgres();
  const px = remote && !REMOTE_URL ? await proxy(a.pgUrl!) : null;
  const running = await Promise.all(Array.from({ length: instances }, () => serve(a, { pgUrl: px?.url })));
  try {
    await Promise.all(running.map((s) => post(s.url, a.key, 2, connections))); // warm-up
    // CPU by role, read inside the measurement (0.5 s after its start, 0.5 s before its end: every process is up).
    let cpu = "";
    const pids = running.map((s) => s.proc.pid);
    const window = Bun.sleep(500).then(async () => {
      const first = cpuByRole(pids, px?.pid);
      await Bun.sleep(SECONDS * 1000 - 1000);
      cpu = cpuLine(first, cpuByRole(pids, px?.pid));
    });
    const rs = await Promise.all(running.map((s) => post(s.url, a.key, SECONDS, connections)));
    await window;
    const sum = (f: (x: LoadResult) => number) => rs.reduce((t, x) => t + f(x), 0);
    const worst = (f: (x: LoadResult) => number) => Math.max(...rs.map(f));
    const r = { rps: sum((x) => x.rps), p50: worst((x) => x.p50), p99: worst((x) => x.p99), non2xx: sum((x) => x.non2xx), total: sum((x) => x.total) };
    report(`${name}: ${load(r)}${instances > 1 ? ` (sum of ${rs.map((x) => fmt(x.rps)).join(" + ")}; worst p)` : ""}`);
    report(cpu);
    return r;
  } finally {
    await Promise.all(running.map((s) => s.stop()));
    px?.stop();
  }
}

if (ONLY.has("sqlite")) results.sqlite = await throughput("sqlite   POST /messages, SQLite appliance, 50 connections", "sqlite", 1, 50, false);
if (ONLY.has("pg")) {
  results.pg = await throughput("pg       POST /messages, one instance, loopback PostgreSQL, 50 connections", "postgres", 1, 50, false);
  report(ratio("loopback PostgreSQL ÷ SQLite", results.pg, results.sqlite, 0.25, "sqlite"));
}
if (ONLY.has("pg8")) results.pg8 = await throughput("pg8      POST /messages, one instance, loopback PostgreSQL, 8 connections", "postgres", 1, 8, false);
if (ONLY.has("remote1")) {
  results.remote1 = await throughput(`remote1  POST /messages, one instance, PostgreSQL ${AWAY}, 8 connections`, "postgres", 1, 8, true);
  report(ratio(`${AWAY} ÷ loopback (50 connections)`, results.remote1, results.pg, 0.5, "pg"));
  if (results.pg8) report(`  ${AWAY} ÷ loopback at the same 8 connections (not the goal's ratio): ${fmt(results.remote1.rps / results.pg8.rps, 2)}`);
}
if (ONLY.has("remote2")) {
  results.remote2 = await throughput(`remote2  POST /messages, two instances, PostgreSQL ${AWAY}, 8 connections each`, "postgres", 2, 8, true);
  report(ratio(`two instances ÷ one, ${AWAY}`, results.remote2, results.remote1, 1.7, "remote1"));
}

if (ONLY.has("lock")) {
  const a = await fresh("postgres");
  const s = await serve(a);
  const auth = { authorization: `Bearer ${a.key}` };
  try {
    await post(s.url, a.key, 1, 4);
    let stop = false;
    const sends: { status: number; ms: number }[] = [];
    const senders = Array.from({ length: 4 }, async () => {
      while (!stop) sends.push(await sendOnce(s.url, a.key, 20_000));
    });
    await Bun.sleep(500);
    const locker = new SQL(a.pgUrl!, { max: 1 });
    let held = 0;
    const lock = locker.begin(async (tx) => {
      await tx`LOCK TABLE messages IN ACCESS EXCLUSIVE MODE`;
      const t = performance.now();
      await Bun.sleep(3000);
      held = performance.now() - t;
    });
    await Bun.sleep(50);
    const health: number[] = [];
    const me: number[] = [];
    const until = performance.now() + 2900;
    while (performance.now() < until) {
      const [h, m] = await Promise.all([timedGet(`${s.url}/healthz`, 10_000), timedGet(`${s.url}/api/public/v1/me`, 10_000, auth)]);
      health.push(h.status === 200 ? h.ms : Number.POSITIVE_INFINITY);
      me.push(m.status === 200 ? m.ms : Number.POSITIVE_INFINITY);
      await Bun.sleep(50);
    }
    await lock;
    await locker.close();
    stop = true;
    await Promise.all(senders);
    const worst = (xs: number[]) => Math.max(...xs);
    const slowSends = sends.filter((x) => x.ms > 1000);
    report(
      `lock     LOCK TABLE messages held ${fmt(held)} ms by another session: GET /healthz worst ${fmt(worst(health))} ms of ${health.length} (goal < 100 ms; ${fmt(worst(health) / 100, 1)}× the goal), GET /me worst ${fmt(worst(me))} ms; sends meanwhile: ${sends.length}, ${slowSends.length} took > 1 s (longest ${fmt(worst(sends.map((x) => x.ms)))} ms), statuses ${JSON.stringify(count(sends.map((x) => x.status)))}`,
    );
  } finally {
    await s.stop();
  }
}
function count(xs: number[]): Record<number, number> {
  const c: Record<number, number> = {};
  for (const x of xs) c[x] = (c[x] ?? 0) + 1;
  return c;
}

if (ONLY.has("blackhole")) {
  const a = await fresh("postgres");
  const px = await proxy(a.pgUrl!);
  const s = await serve(a, { pgUrl: px.url });
  try {
    await post(s.url, a.key, 1, 4);
    px.blackhole();
    const t0 = performance.now();
    // Sends already under way when the network goes, and /healthz right after.
    const sends = Promise.all(Array.from({ length: 4 }, () => sendOnce(s.url, a.key, 15_000)));
    await Bun.sleep(100);
    const health = await timedGet(`${s.url}/healthz`, 5000);
    const ready = await timedGet(`${s.url}/readyz`, 5000);
    const sent = await sends;
    const blackholedMs = performance.now() - t0;
    px.restore();
    // Recovery: the first send that is accepted after forwarding resumes (the instance is not restarted).
    const t1 = performance.now();
    let recoveredMs = -1;
    while (performance.now() - t1 < 30_000) {
      const r = await sendOnce(s.url, a.key, 5000);
      if (r.status === 202) {
        recoveredMs = performance.now() - t1;
        break;
      }
      await Bun.sleep(100);
    }
    const answer = (r: { status: number; ms: number }) => (r.status ? `${r.status} in ${fmt(r.ms)} ms` : `no answer in ${fmt(r.ms)} ms`);
    report(
      `blackhole network black-holed ${fmt(blackholedMs / 1000, 1)} s: GET /healthz ${answer(health)}, /readyz ${answer(ready)}; 4 sends: ${sent.map(answer).join(", ")}${sent.some((x) => x.retryAfter) ? ` (Retry-After ${sent.find((x) => x.retryAfter)!.retryAfter})` : ""}; after restore: ${recoveredMs >= 0 ? `a send accepted after ${fmt(recoveredMs)} ms, no restart` : "no send accepted within 30 s"} (goal: 503 within the timeouts, /healthz at once, recovers by itself)`,
    );
  } finally {
    await s.stop();
    px.stop();
  }
}

if (ONLY.has("nolibpq")) {
  const lib = spawnSync(["sh", "-c", "ldconfig -p | awk '/libpq\\.so\\.5 .*x86-64/ {print $NF; exit}'"]).stdout.toString().trim();
  const probe = lib
    ? spawnSync(["unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind /dev/null ${realpathSync(lib)} && test ! -s ${lib}`])
    : null;
  if (!lib) report("nolibpq  the host has no libpq.so.5: the binary's start on PostgreSQL here is the libpq-less case — run the pg measurement");
  else if (probe?.exitCode !== 0) report(`nolibpq  not measurable here: cannot hide ${lib} in a mount namespace (${probe?.stderr.toString().trim()})`);
  else {
    const a = await fresh("postgres");
    const wrap = ["unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind /dev/null ${realpathSync(lib)} && exec "$0" "$@"`];
    try {
      const s = await serve(a, { wrap, timeoutMs: 15_000 });
      const r = await sendOnce(s.url, a.key, 5000);
      await s.stop();
      report(`nolibpq  ${lib} hidden (/dev/null bound over it in a mount namespace): serve started, a send got ${r.status} (goal: works)`);
    } catch (e) {
      report(`nolibpq  ${lib} hidden (/dev/null bound over it in a mount namespace): ${(e as Error).message.slice(0, 300)} (goal: works)`);
    }
  }
}

console.log(`\nsummary (${SECONDS} s per throughput measurement):\n${summary.join("\n")}`);
process.exit(0);
