/**
 * Soak: mixed traffic against the compiled appliance for a while, then drain. Run: `make soak`
 * (SOAK_SECONDS, default 600) or `./node_modules/.bin/bun bench/soak.ts --seconds 600 [--rate N] [--drain-seconds N]`; the test suite runs
 * a 20-second version (test/reliability/soak.test.ts).
 * Traffic, 16 workers in parallel: template sends (a few to the sandbox's failing numbers), contact upserts
 * and lists, inbound messages through the sandbox hook, conversation reads; a webhook endpoint on loopback
 * receives every message event. Reported: requests and their statuses, p99 per phase (first and last
 * third), p50/p99 per route class and third (issue 42), the job and webhook backlog at the end of each third, RSS at start, peak and end, and after the drain:
 * messages not terminal, jobs left running or pending, webhook deliveries not delivered.
 * bench/growth.ts runs the same mix (`startMixAppliance`, `runMix`) against a pre-filled database.
 */
import { Database } from "bun:sqlite";
import { spawn } from "bun";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BINARY, fmt, freePort, initAppliance, rssMb, waitFor } from "./lib";

/** The route classes of the mix, in the order of its shares: 4 in 10 sends, 2 upserts, then 1 each. */
export const ROUTE_CLASSES = ["send", "contactUpsert", "tagList", "inbound", "conversationList", "me"] as const;
export type RouteClass = (typeof ROUTE_CLASSES)[number];
const classOf = (i: number): RouteClass => {
  const r = i % 10;
  return r < 4 ? "send" : r < 6 ? "contactUpsert" : r < 7 ? "tagList" : r < 8 ? "inbound" : r < 9 ? "conversationList" : "me";
};

export interface Quantiles {
  n: number;
  p50: number;
  p99: number;
}
export const quantile = (xs: number[], q: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length * q)]! : 0);
export const quantiles = (xs: number[]): Quantiles => ({ n: xs.length, p50: quantile(xs, 0.5), p99: quantile(xs, 0.99) });

export interface SoakReport {
  seconds: number;
  requests: number;
  statuses: Record<number, number>;
  p99FirstMs: number;
  p99LastMs: number;
  /** Per route class: p50/p99 in each third of the run. */
  thirds: Record<RouteClass, [Quantiles, Quantiles, Quantiles]>;
  /** The background backlog at the end of each third: jobs pending or running, webhook deliveries not yet delivered. */
  backlog: { jobs: number; webhooks: number }[];
  rssStartMb: number;
  rssPeakMb: number;
  rssEndMb: number;
  notTerminal: number;
  jobsLeft: number;
  webhooksUndelivered: number;
  webhooksReceived: number;
  /** How long the drain took (or was given up after). */
  drainMs: number;
}

export interface MixAppliance {
  url: string;
  key: string;
  pid: number;
  dataDir: string;
  companyId: string;
  webhooksReceived: () => number;
  stop: () => Promise<void>;
}

/**
 * A fresh appliance set up for the mix: fast sandbox reports, a balance, an unlimited key, a webhook to a
 * loopback receiver. `beforeServe` may write into the database file before the server opens it.
 */
export async function startMixAppliance(
  beforeServe?: (init: { configPath: string; dataDir: string; companyId: string }) => void | Promise<void>,
): Promise<MixAppliance> {
  const { dir, key, ...init } = initAppliance({ credit: "100000" });
  // Fast sandbox reports so every message reaches read within the run.
  writeFileSync(
    init.configPath,
    readFileSync(init.configPath, "utf8").replace(
      /(name = "WhatsApp \(sandbox\)"\ndefault = true\n)/,
      "$1[channels.settings]\nsent_after_ms = 0\ndelivered_after_ms = 100\nread_after_ms = 100\n",
    ),
  );
  await beforeServe?.(init);
  const port = await freePort();
  const proc = spawn([BINARY, "serve", "--config", init.configPath], {
    env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn" },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  let webhooksReceived = 0;
  const receiver = Bun.serve({ port: 0, fetch: async (req) => (await req.text(), webhooksReceived++, new Response("ok")) });
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
    receiver.stop(true);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(`${url}/healthz`, 120_000);
    const res = await fetch(`${url}/api/public/v1/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        url: `http://127.0.0.1:${receiver.port}/hook`,
        events: ["message.sent", "message.delivered", "message.read", "message.failed", "message.received"],
      }),
    });
    if (!res.ok) throw new Error(`POST /webhooks: ${res.status} ${await res.text()}`);
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, key, pid: proc.pid, dataDir: init.dataDir, companyId: init.companyId, webhooksReceived: () => webhooksReceived, stop };
}

/**
 * The mix for `seconds`, 16 workers: calls `record(class, ms, at)` per request, `at` its start as a
 * fraction of the run (0–1); the classes in `skip` are left out. Returns the requests made and their statuses.
 */
export async function runMix(
  app: MixAppliance,
  seconds: number,
  record: (cls: RouteClass, ms: number, at: number) => void,
  skip: ReadonlySet<RouteClass> = new Set(),
  ratePerSecond = 0,
): Promise<{ requests: number; statuses: Record<number, number> }> {
  const { url, key } = app;
  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${url}/api/public/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const whatsapp = ((await (await api("GET", "/channels")).json()) as { data: { id: string; channel: string }[] }).data.find(
    (c) => c.channel === "whatsapp",
  )!.id;
  const step = (i: number, cls: RouteClass) => {
    const phone = `+1415${String(5_000_000 + (i % 50_000)).padStart(7, "0")}`;
    switch (cls) {
      case "send":
        return api("POST", "/messages", {
          channel: "whatsapp",
          to: { phone: i % 97 === 0 ? "+12025550102" : phone },
          type: "template",
          template: { name: "hello_world", params: { "body.1": "A" } },
        });
      case "contactUpsert":
        return api("POST", "/contacts", { identities: [{ channel: "whatsapp", value: phone }], tags: [`t${i % 7}`], optIn: true });
      case "tagList":
        return api("GET", `/contacts?tag=t${i % 7}&limit=50`);
      case "inbound":
        return fetch(`${url}/hooks/${whatsapp}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ from: { phone }, text: `hi ${i}` }),
        });
      case "conversationList":
        return api("GET", "/conversations?limit=20");
      case "me":
        return api("GET", "/me");
    }
  };
  const statuses: Record<number, number> = {};
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < end) {
        const i = n++;
        const cls = classOf(i);
        if (skip.has(cls)) continue;
        // An offered rate: request i starts no earlier than its slot (the workers then idle between them).
        if (ratePerSecond > 0) {
          const due = t0 + (i * 1000) / ratePerSecond;
          if (due >= end) break;
          if (due > performance.now()) await Bun.sleep(due - performance.now());
        }
        const s = performance.now();
        const res = await step(i, cls);
        await res.arrayBuffer();
        record(cls, performance.now() - s, (s - t0) / (end - t0));
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  return { requests: Object.values(statuses).reduce((a, b) => a + b, 0), statuses };
}

/**
 * `rate`: requests per second offered (0: the 16 workers as fast as they are answered — past the appliance's
 * capacity the background then falls behind and catches up in the drain); `drainSeconds`: how long the drain may take.
 */
export async function runSoak(seconds: number, { rate = 0, drainSeconds = 900 }: { rate?: number; drainSeconds?: number } = {}): Promise<SoakReport> {
  const app = await startMixAppliance();
  try {
    const all: number[][] = [[], [], []];
    const perClass = Object.fromEntries(ROUTE_CLASSES.map((c) => [c, [[], [], []]])) as unknown as Record<RouteClass, number[][]>;
    const rssStartMb = rssMb(app.pid);
    let rssPeakMb = rssStartMb;
    const sampler = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, rssMb(app.pid))), 1000);
    const counts = () => {
      const d = new Database(join(app.dataDir, "switchboard.db"), { readonly: true });
      try {
        const one = (q: string) => (d.query(q).get() as { n: number }).n;
        return {
          notTerminal: one(`SELECT count(*) AS n FROM messages WHERE direction = 'outbound' AND status NOT IN ('read', 'failed')`),
          jobsLeft: one(`SELECT count(*) AS n FROM jobs WHERE status IN ('pending', 'running')`),
          webhooksUndelivered: one(`SELECT count(*) AS n FROM webhook_deliveries WHERE status <> 'succeeded'`),
        };
      } finally {
        d.close();
      }
    };
    const backlog: SoakReport["backlog"] = [];
    const takeBacklog = () => {
      const c = counts();
      backlog.push({ jobs: c.jobsLeft, webhooks: c.webhooksUndelivered });
    };
    const marks = [1, 2].map((k) => setTimeout(takeBacklog, (seconds * 1000 * k) / 3));
    const { requests, statuses } = await runMix(
      app,
      seconds,
      (cls, ms, at) => {
        const third = Math.min(2, Math.floor(at * 3));
        all[third]!.push(ms);
        perClass[cls][third]!.push(ms);
      },
      new Set(),
      rate,
    );
    for (const m of marks) clearTimeout(m);
    takeBacklog();
    // Drain: every message terminal, every job done, every webhook delivered (or given up on).
    const drainStart = performance.now();
    const drainEnd = drainStart + drainSeconds * 1000;
    let c = counts();
    while (performance.now() < drainEnd && (c.notTerminal || c.jobsLeft || c.webhooksUndelivered)) {
      await Bun.sleep(Math.min(1000, 100 + (performance.now() - drainStart) / 10));
      c = counts();
    }
    const drainMs = performance.now() - drainStart;
    clearInterval(sampler);
    return {
      seconds,
      requests,
      statuses,
      p99FirstMs: quantile(all[0]!, 0.99),
      p99LastMs: quantile(all[2]!, 0.99),
      thirds: Object.fromEntries(ROUTE_CLASSES.map((cls) => [cls, perClass[cls].map(quantiles)])) as SoakReport["thirds"],
      backlog,
      rssStartMb,
      rssPeakMb,
      rssEndMb: rssMb(app.pid),
      ...c,
      drainMs,
      webhooksReceived: app.webhooksReceived(),
    };
  } finally {
    await app.stop();
  }
}

/** One line per route class: p50/p99 of each third and last ÷ first (the goal: p99 ≤ 1.2×). */
export function thirdsTable(thirds: SoakReport["thirds"]): string {
  const q = (x: Quantiles) => `${fmt(x.p50, 1)}/${fmt(x.p99, 1)}`.padStart(12);
  const lines = [
    `${"route class".padEnd(17)} ${"n".padStart(7)} ${"1st p50/p99".padStart(12)} ${"2nd".padStart(12)} ${"3rd".padStart(12)}   last÷first p50, p99`,
  ];
  for (const cls of ROUTE_CLASSES) {
    const [a, b, c] = thirds[cls];
    const n = a.n + b.n + c.n;
    lines.push(
      `${cls.padEnd(17)} ${fmt(n).padStart(7)} ${q(a)} ${q(b)} ${q(c)}   ${fmt(c.p50 / a.p50, 2)}×, ${fmt(c.p99 / a.p99, 2)}×${c.p99 / a.p99 > 1.2 ? "  (goal ≤ 1.2×)" : ""}`,
    );
  }
  return lines.join("\n");
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      seconds: { type: "string", default: process.env.SOAK_SECONDS ?? "600" },
      rate: { type: "string", default: "0" },
      "drain-seconds": { type: "string", default: "900" },
    },
  });
  const r = await runSoak(Number(values.seconds), { rate: Number(values.rate), drainSeconds: Number(values["drain-seconds"]) });
  console.log(`soak ${r.seconds} s: ${fmt(r.requests)} requests (${fmt(r.requests / r.seconds)}/s), statuses ${JSON.stringify(r.statuses)}`);
  console.log(`p99 first third ${fmt(r.p99FirstMs, 1)} ms, last third ${fmt(r.p99LastMs, 1)} ms`);
  console.log(`per route class, ms (p50/p99 per third):\n${thirdsTable(r.thirds)}`);
  console.log(
    `backlog at the end of each third (jobs pending or running / webhook deliveries not delivered): ${r.backlog.map((b) => `${fmt(b.jobs)} / ${fmt(b.webhooks)}`).join(", ")}`,
  );
  console.log(`RSS start ${fmt(r.rssStartMb)} MB, peak ${fmt(r.rssPeakMb)} MB, end ${fmt(r.rssEndMb)} MB`);
  console.log(
    `after the drain (${fmt(r.drainMs / 1000, 1)} s): ${r.notTerminal} messages not terminal, ${r.jobsLeft} jobs left, ${r.webhooksUndelivered} webhook deliveries not delivered (${fmt(r.webhooksReceived)} received)`,
  );
}
