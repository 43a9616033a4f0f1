/**
 * PostgreSQL beside SQLite (issue 18), the compiled binary, every figure from the same run. Run:
 * `make build && ./node_modules/.bin/bun bench/postgres.bench.ts [--seconds 10] [--drain 20000] [--import-rows 1000000] [--rounds 2] [--skip-send] [--skip-drain] [--skip-import] [--send sqlite,pg1,pg2]`.
 * SWITCHBOARD_BENCH_BINARY=<path> measures another build (e.g. the one before a change, alternating).
 * PostgreSQL: Debian's server, a throwaway cluster on loopback with its durable defaults (fsync and
 * synchronous_commit on: a 202 is a promise on both engines); or SWITCHBOARD_TEST_PG_URL.
 *
 * 1. Accepted POST /messages per second (sandbox WhatsApp, priced template, known contact; dispatch and
 *    delivered/read reports running), 50 connections: SQLite, one instance on PostgreSQL, two instances on
 *    one PostgreSQL (25 connections to each, summed). Each measurement on a fresh database, alternating.
 * 2. Drain: N messages queued (in process, through the same service) while no instance runs, then one
 *    SQLite instance, one PostgreSQL instance or two on one PostgreSQL start; time until none is queued.
 * 3. Import of N NDJSON contacts (2 identities + a tag each) through POST /contacts/import, then
 *    POST /campaigns/estimate over a tag audience of all of them (best of 3): SQLite and PostgreSQL.
 */
process.env.SWITCHBOARD_TEST_PG_DURABLE = "1";
import { SQL, spawn, spawnSync } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config/config.load";
import { buildDeps } from "../src/deps";
import { silentLogger } from "../src/platform/logger";
import { sendMessage } from "../src/modules/messages/messages.service";
import { findCompanyBySlug } from "../src/modules/companies/companies.service";
import { Database } from "bun:sqlite";
import { freshPostgresDatabase, postgresAvailable, POSTGRES_SKIP_REASON } from "../test/helpers/postgres";
import { autocannon, BINARY, fmt, freePort, tempDir, waitFor, type LoadResult } from "./lib";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    drain: { type: "string", default: "20000" },
    "import-rows": { type: "string", default: "1000000" },
    rounds: { type: "string", default: "2" },
    "skip-send": { type: "boolean", default: false },
    "skip-drain": { type: "boolean", default: false },
    "skip-import": { type: "boolean", default: false },
    // which of the send measurements run: sqlite, pg1 (one instance), pg2 (two instances)
    send: { type: "string", default: "sqlite,pg1,pg2" },
  },
});
if (!postgresAvailable()) throw new Error(POSTGRES_SKIP_REASON);
const SECONDS = Number(values.seconds);
const DRAIN = Number(values.drain);
const IMPORT_ROWS = Number(values["import-rows"]);
const ROUNDS = Number(values.rounds);
const SEND_RUNS = new Set(values.send.split(","));

type Engine = "sqlite" | "postgres";
interface Appliance {
  engine: Engine;
  configPath: string;
  key: string;
  url?: string; // PostgreSQL
  dataDir: string;
}
const cli = (args: string[]) => {
  const r = spawnSync([BINARY, ...args]);
  if (r.exitCode !== 0) throw new Error(`switchboard ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
};

/** A fresh appliance from `init`; on PostgreSQL its config points at a fresh database, migrated and seeded. */
async function fresh(engine: Engine): Promise<Appliance> {
  const dir = tempDir();
  const init = JSON.parse(cli(["init", "--dir", dir, "--json"])) as { configPath: string; dataDir: string };
  // No sandbox send delay on the WhatsApp account (the first [[channels]] entry init writes): the drain
  // measures the appliance, not the sandbox's simulated provider latency.
  const sandbox = readFileSync(init.configPath, "utf8").replace(
    'channel = "whatsapp"\nprovider = "sandbox"\nname = "WhatsApp (sandbox)"\ndefault = true\n',
    (m) => `${m}[channels.settings]\nsent_after_ms = 0\n`,
  );
  if (!sandbox.includes("sent_after_ms = 0")) throw new Error("could not set the sandbox's sent_after_ms");
  writeFileSync(init.configPath, sandbox);
  let url: string | undefined;
  if (engine === "postgres") {
    url = await freshPostgresDatabase("sb_bench");
    const toml = readFileSync(init.configPath, "utf8").replace(
      '[storage]\ndata_dir = "./data"',
      `[storage]\ndata_dir = "./data"\ndriver = "postgres"\nurl = "${url}"`,
    );
    if (!toml.includes('driver = "postgres"')) throw new Error("could not point the config at PostgreSQL");
    writeFileSync(init.configPath, toml);
    cli(["migrate", "--config", init.configPath]);
    cli(["companies", "create", "--slug", "default", "--name", "Default", "--config", init.configPath]);
  }
  cli(["balance", "credit", "--company", "default", "--amount", "1000000", "--config", init.configPath]);
  const key = JSON.parse(cli(["keys", "create", "--company", "default", "--name", "bench", "--rate-limit", "10000000", "--json", "--config", init.configPath]))
    .key as string;
  return { engine, configPath: init.configPath, key, url, dataDir: init.dataDir };
}

async function start(a: Appliance): Promise<{ url: string; stop: () => Promise<void> }> {
  const port = await freePort();
  const proc = spawn([BINARY, "serve", "--config", a.configPath], {
    env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn" },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`, 30_000);
  return {
    url,
    stop: async () => {
      proc.kill("SIGTERM");
      await proc.exited;
    },
  };
}

/** A read-only count on the appliance's database, from outside it. */
function counter(a: Appliance): { count(sql: string): Promise<number>; close(): void } {
  if (a.engine === "postgres") {
    const c = new SQL(a.url!, { max: 1 });
    return { count: async (sql) => Number(Object.values((await c.unsafe(sql))[0] as object)[0]), close: () => void c.close() };
  }
  const db = new Database(join(a.dataDir, "switchboard.db"), { readonly: true });
  return { count: async (sql) => Number(Object.values(db.query(sql).get() as object)[0]), close: () => db.close() };
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
  });
const line = (name: string, r: { rps: number; p50: number; p99: number; non2xx?: number }) =>
  `${name.padEnd(40)}: ${fmt(r.rps).padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms${r.non2xx ? `  (${r.non2xx} non-2xx!)` : ""}`;

// ---------------------------------------------------------------------------------- 1. accepted/s
if (!values["skip-send"]) {
  const results: Record<string, LoadResult[]> = { sqlite: [], pg1: [], pg2: [] };
  for (let round = 0; round < ROUNDS; round++) {
    if (SEND_RUNS.has("sqlite")) {
      const a = await fresh("sqlite");
      const s = await start(a);
      await post(s.url, a.key, 2, 50);
      results.sqlite!.push(await post(s.url, a.key, SECONDS, 50));
      await s.stop();
    }
    if (SEND_RUNS.has("pg1")) {
      const a = await fresh("postgres");
      const s = await start(a);
      await post(s.url, a.key, 2, 50);
      results.pg1!.push(await post(s.url, a.key, SECONDS, 50));
      await s.stop();
    }
    if (SEND_RUNS.has("pg2")) {
      const a = await fresh("postgres");
      const [s1, s2] = [await start(a), await start(a)];
      await Promise.all([post(s1.url, a.key, 2, 25), post(s2.url, a.key, 2, 25)]);
      const [r1, r2] = await Promise.all([post(s1.url, a.key, SECONDS, 25), post(s2.url, a.key, SECONDS, 25)]);
      results.pg2!.push({ ...r1, rps: r1.rps + r2.rps, p50: Math.max(r1.p50, r2.p50), p99: Math.max(r1.p99, r2.p99), non2xx: r1.non2xx + r2.non2xx });
      await Promise.all([s1.stop(), s2.stop()]);
    }
    console.log(`round ${round + 1}:`);
    if (SEND_RUNS.has("sqlite")) console.log("  " + line("SQLite, one instance", results.sqlite!.at(-1)!));
    if (SEND_RUNS.has("pg1")) console.log("  " + line("PostgreSQL, one instance", results.pg1!.at(-1)!));
    if (SEND_RUNS.has("pg2")) console.log("  " + line("PostgreSQL, two instances (sum; worst p)", results.pg2!.at(-1)!));
  }
  const best = (k: string) => Math.max(...results[k]!.map((r) => r.rps));
  if (SEND_RUNS.size === 3)
    console.log(
      `POST /messages, best of ${ROUNDS}: PostgreSQL one ÷ SQLite ${fmt(best("pg1") / best("sqlite"), 2)}; two ÷ one instance on PostgreSQL ${fmt(best("pg2") / best("pg1"), 2)}`,
    );
}

// ---------------------------------------------------------------------------------- 2. drain
async function queue(a: Appliance, n: number): Promise<number> {
  const config = loadConfig({ path: a.configPath, env: {} });
  const deps = await buildDeps({ config, log: silentLogger });
  const company = (await findCompanyBySlug({ db: deps.db, slug: "default" }))!;
  const t0 = performance.now();
  for (let done = 0; done < n; ) {
    const batch = Math.min(1000, n - done);
    await deps.db.unit(async () => {
      for (let i = 0; i < batch; i++)
        await sendMessage(deps, {
          companyId: company.id,
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
  deps.db.close();
  return performance.now() - t0;
}

async function drain(a: Appliance, instances: number): Promise<number> {
  const c = counter(a);
  const t0 = performance.now();
  const running = await Promise.all(Array.from({ length: instances }, () => start(a)));
  while ((await c.count("SELECT count(*) AS n FROM messages WHERE status = 'queued'")) > 0) await Bun.sleep(50);
  const ms = performance.now() - t0;
  c.close();
  await Promise.all(running.map((s) => s.stop()));
  return ms;
}

if (!values["skip-drain"]) {
  for (const [engine, instances] of [
    ["sqlite", 1],
    ["postgres", 1],
    ["postgres", 2],
  ] as const) {
    const a = await fresh(engine);
    // The templates arrive with the first start (the sandbox's template sync).
    await (await start(a)).stop();
    const queuedMs = await queue(a, DRAIN);
    const ms = await drain(a, instances);
    console.log(
      `drain ${fmt(DRAIN)} queued messages, ${engine === "sqlite" ? "SQLite" : "PostgreSQL"}, ${instances} instance${instances > 1 ? "s" : ""}: ${fmt(DRAIN / (ms / 1000))} messages/s (${fmt(ms / 1000, 1)} s from exec to none queued; queued in process at ${fmt(DRAIN / (queuedMs / 1000))}/s)`,
    );
  }
}

// ---------------------------------------------------------------------------------- 3. import + estimate
if (!values["skip-import"]) {
  const file = join(tempDir(), "import.ndjson");
  const w = Bun.file(file).writer();
  for (let i = 0; i < IMPORT_ROWS; i++) {
    w.write(
      JSON.stringify({
        firstName: `First${i % 5000}`,
        lastName: `Last${i}`,
        identities: [
          { channel: "email", value: `user${i}@import.bench` },
          { channel: "whatsapp", value: `+49151${String(i).padStart(8, "0")}` },
        ],
        tags: ["all"],
      }) + "\n",
    );
    if (i % 10000 === 0) await w.flush();
  }
  await w.end();
  for (const engine of ["sqlite", "postgres"] as const) {
    const a = await fresh(engine);
    const s = await start(a);
    const api = `${s.url}/api/public/v1`;
    const auth = { authorization: `Bearer ${a.key}` };
    const t0 = performance.now();
    const { data } = (await (
      await fetch(`${api}/contacts/import`, { method: "POST", headers: { ...auth, "content-type": "application/x-ndjson" }, body: Bun.file(file) })
    ).json()) as { data: { id: string } };
    let imp: { status: string; created: number; failed: number };
    for (;;) {
      imp = ((await (await fetch(`${api}/contacts/imports/${data.id}`, { headers: auth })).json()) as { data: typeof imp }).data;
      if (imp.status === "completed" || imp.status === "failed") break;
      await Bun.sleep(200);
    }
    const importMs = performance.now() - t0;
    const templates = (await (await fetch(`${api}/templates?channel=whatsapp`, { headers: auth })).json()) as { data: { id: string; name: string }[] };
    const request = {
      templateId: templates.data.find((t) => t.name === "hello_world")!.id,
      audience: { type: "tags", tags: ["all"], match: "any" },
      askValues: { "body.1": '{{contact.firstName | "friend"}}' },
    };
    const estMs: number[] = [];
    let est: { matched: number } | undefined;
    for (let r = 0; r < 3; r++) {
      const t = performance.now();
      const res = (await (
        await fetch(`${api}/campaigns/estimate`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify(request) })
      ).json()) as { data: { matched: number } };
      estMs.push(performance.now() - t);
      est = res.data;
    }
    await s.stop();
    console.log(
      `${engine === "sqlite" ? "SQLite    " : "PostgreSQL"}: import ${fmt(IMPORT_ROWS)} rows ${imp.status} (${fmt(imp.created)} created, ${fmt(imp.failed)} failed) in ${fmt(importMs / 1000, 1)} s = ${fmt(IMPORT_ROWS / (importMs / 1000))} rows/s; estimate over ${fmt(est?.matched ?? 0)}: best ${fmt(Math.min(...estMs))} ms`,
    );
  }
}
process.exit(0);
