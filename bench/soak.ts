/**
 * Soak: mixed traffic against the compiled appliance for a while, then drain. Run: `make soak`
 * (SOAK_SECONDS, default 600) or `./node_modules/.bin/bun bench/soak.ts --seconds 600`; the test suite runs
 * a 20-second version (test/reliability/soak.test.ts).
 * Traffic, 16 workers in parallel: template sends (a few to the sandbox's failing numbers), contact upserts
 * and lists, inbound messages through the sandbox hook, conversation reads; a webhook endpoint on loopback
 * receives every message event. Reported: requests and their statuses, p99 per phase (first and last
 * third), RSS at start, peak and end, and after the drain: messages not terminal, jobs left running or
 * pending, webhook deliveries not delivered.
 */
import { Database } from "bun:sqlite";
import { spawn, spawnSync } from "bun";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BINARY, fmt, freePort, rssMb, tempDir, waitFor } from "./lib";

export interface SoakReport {
  seconds: number;
  requests: number;
  statuses: Record<number, number>;
  p99FirstMs: number;
  p99LastMs: number;
  rssStartMb: number;
  rssPeakMb: number;
  rssEndMb: number;
  notTerminal: number;
  jobsLeft: number;
  webhooksUndelivered: number;
  webhooksReceived: number;
}

const p99 = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]! : 0);

export async function runSoak(seconds: number): Promise<SoakReport> {
  const dir = tempDir("sb-soak-");
  const init = JSON.parse(spawnSync([BINARY, "init", "--dir", dir, "--json"]).stdout.toString()) as {
    configPath: string;
    dataDir: string;
    apiKey: string;
    companyId: string;
  };
  // Fast sandbox reports so every message reaches read within the run.
  writeFileSync(
    init.configPath,
    readFileSync(init.configPath, "utf8").replace(
      /(name = "WhatsApp \(sandbox\)"\ndefault = true\n)/,
      "$1[channels.settings]\nsent_after_ms = 0\ndelivered_after_ms = 100\nread_after_ms = 100\n",
    ),
  );
  spawnSync([BINARY, "balance", "credit", "--company", "default", "--amount", "100000", "--config", init.configPath]);
  const key = JSON.parse(
    spawnSync([
      BINARY,
      "keys",
      "create",
      "--company",
      "default",
      "--name",
      "soak",
      "--rate-limit",
      "1000000",
      "--json",
      "--config",
      init.configPath,
    ]).stdout.toString(),
  ).key as string;
  const port = await freePort();
  const proc = spawn([BINARY, "serve", "--config", init.configPath], {
    env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn" },
    stdout: "ignore",
    stderr: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  let webhooksReceived = 0;
  const receiver = Bun.serve({ port: 0, fetch: async (req) => (await req.text(), webhooksReceived++, new Response("ok")) });
  try {
    await waitFor(`${url}/healthz`, 30_000);
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${url}/api/public/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    await api("POST", "/webhooks", {
      url: `http://127.0.0.1:${receiver.port}/hook`,
      events: ["message.sent", "message.delivered", "message.read", "message.failed", "message.received"],
    });
    const whatsapp = ((await (await api("GET", "/channels")).json()) as { data: { id: string; channel: string }[] }).data.find(
      (c) => c.channel === "whatsapp",
    )!.id;

    const statuses: Record<number, number> = {};
    const first: number[] = [];
    const last: number[] = [];
    const t0 = performance.now();
    const end = t0 + seconds * 1000;
    const rssStartMb = rssMb(proc.pid!);
    let rssPeakMb = rssStartMb;
    const sampler = setInterval(() => (rssPeakMb = Math.max(rssPeakMb, rssMb(proc.pid!))), 1000);
    let n = 0;
    const step = async (i: number) => {
      const phone = `+1415${String(5_000_000 + (i % 50_000)).padStart(7, "0")}`;
      const r = i % 10;
      if (r < 4)
        return api("POST", "/messages", {
          channel: "whatsapp",
          to: { phone: i % 97 === 0 ? "+12025550102" : phone },
          type: "template",
          template: { name: "hello_world", params: { "body.1": "A" } },
        });
      if (r < 6) return api("POST", "/contacts", { identities: [{ channel: "whatsapp", value: phone }], tags: [`t${i % 7}`], optIn: true });
      if (r < 7) return api("GET", `/contacts?tag=t${i % 7}&limit=50`);
      if (r < 8)
        return fetch(`${url}/hooks/${whatsapp}`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({ from: { phone }, text: `hi ${i}` }),
        });
      if (r < 9) return api("GET", "/conversations?limit=20");
      return api("GET", "/me");
    };
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < end) {
          const i = n++;
          const s = performance.now();
          const res = await step(i);
          await res.arrayBuffer();
          const ms = performance.now() - s;
          statuses[res.status] = (statuses[res.status] ?? 0) + 1;
          const at = (s - t0) / (end - t0);
          if (at < 1 / 3) first.push(ms);
          else if (at > 2 / 3) last.push(ms);
        }
      }),
    );
    // Drain: every message terminal, every job done, every webhook delivered (or given up on).
    const db = () => new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
    const counts = () => {
      const d = db();
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
    let c = counts();
    for (let i = 0; i < 600 && (c.notTerminal || c.jobsLeft || c.webhooksUndelivered); i++) {
      await Bun.sleep(100);
      c = counts();
    }
    clearInterval(sampler);
    return {
      seconds,
      requests: n,
      statuses,
      p99FirstMs: p99(first),
      p99LastMs: p99(last),
      rssStartMb,
      rssPeakMb,
      rssEndMb: rssMb(proc.pid!),
      ...c,
      webhooksReceived,
    };
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    receiver.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { seconds: { type: "string", default: process.env.SOAK_SECONDS ?? "600" } } });
  const r = await runSoak(Number(values.seconds));
  console.log(`soak ${r.seconds} s: ${fmt(r.requests)} requests (${fmt(r.requests / r.seconds)}/s), statuses ${JSON.stringify(r.statuses)}`);
  console.log(`p99 first third ${fmt(r.p99FirstMs, 1)} ms, last third ${fmt(r.p99LastMs, 1)} ms`);
  console.log(`RSS start ${fmt(r.rssStartMb)} MB, peak ${fmt(r.rssPeakMb)} MB, end ${fmt(r.rssEndMb)} MB`);
  console.log(
    `after the drain: ${r.notTerminal} messages not terminal, ${r.jobsLeft} jobs left, ${r.webhooksUndelivered} webhook deliveries not delivered (${fmt(r.webhooksReceived)} received)`,
  );
}
