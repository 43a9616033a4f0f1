/**
 * SQLITE_BUSY storms from a second process, against the compiled binary: while clients send messages, a
 * second process (test/reliability/fixtures/write-storm.ts, as a CLI command or a backup would) holds write
 * transactions on the same database file — first many short ones (BEGIN IMMEDIATE … a few ms … COMMIT),
 * then one held 6.5 s, longer than the busy timeout (5 s). Requirement: no 5xx but the documented 503
 * STORAGE_UNAVAILABLE with Retry-After, every accepted message stored and sent, the file intact.
 * Printed: accepted/s, statuses, POST and GET /healthz latency in each phase.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { appendFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { run, serve, tempDir, type RunningServer } from "../e2e/binary";

const STORM = resolve(import.meta.dir, "fixtures/write-storm.ts");
let dir: string;
let init: { configPath: string; dataDir: string; apiKey: string };
let server: RunningServer;

beforeAll(async () => {
  dir = tempDir("sb-busy-");
  init = JSON.parse(run(["init", "--dir", dir, "--json"]).stdout);
  expect(run(["balance", "credit", "--company", "default", "--amount", "100000.000000", "--config", init.configPath]).code).toBe(0);
  appendFileSync(init.configPath, "\n[rate_limit]\nrequests_per_second = 100000\nburst = 100000\n\n[log]\nlevel = \"warn\"\n");
  server = await serve(init.configPath);
});
afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const dbPath = () => join(init.dataDir, "switchboard.db");
function sql<T>(query: string, ...params: string[]): T[] {
  const db = new Database(dbPath(), { readonly: true });
  try {
    return db.query(query).all(...params) as T[];
  } finally {
    db.close();
  }
}
const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]! : NaN);
let phone = 0;

interface Phase {
  name: string;
  statuses: Record<string, number>;
  accepted: string[];
  post: number[];
  probe: number[];
  wallMs: number;
  storm: { transactions: number; busy: number; longestWaitMs: number };
}

/** Runs the storm process and, until it exits, `clients` senders plus one GET /healthz prober every 50 ms. */
async function phase(name: string, args: { durationMs: number; holdMs: number; gapMs: number }, clients = 6): Promise<Phase> {
  const storm = Bun.spawn([process.execPath, STORM, dbPath(), String(args.durationMs), String(args.holdMs), String(args.gapMs)], { stdout: "pipe", stderr: "pipe" });
  const lines = (async () => {
    let out = "";
    for await (const chunk of storm.stdout as ReadableStream<Uint8Array>) out += new TextDecoder().decode(chunk);
    return out.trim().split("\n").map((l) => JSON.parse(l));
  })();
  let running = true;
  void storm.exited.then(() => (running = false));
  const p: Phase = { name, statuses: {}, accepted: [], post: [], probe: [], wallMs: 0, storm: { transactions: 0, busy: 0, longestWaitMs: 0 } };
  const t0 = performance.now();
  const sender = async () => {
    while (running) {
      const started = performance.now();
      const res = await fetch(`${server.url}/api/public/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${init.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ channel: "whatsapp", to: { phone: `+1415${String(7_000_000 + phone++)}` }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } }),
      });
      p.post.push(performance.now() - started);
      const body = (await res.json()) as { data?: { id: string }; error?: { code: string } };
      const key = res.status === 202 ? "202" : `${res.status} ${body.error?.code} retry-after=${res.headers.get("retry-after")}`;
      p.statuses[key] = (p.statuses[key] ?? 0) + 1;
      if (res.status === 202) p.accepted.push(body.data!.id);
    }
  };
  const prober = async () => {
    while (running) {
      const started = performance.now();
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      p.probe.push(performance.now() - started);
      await Bun.sleep(50);
    }
  };
  await Promise.all([...Array.from({ length: clients }, sender), prober()]);
  p.wallMs = performance.now() - t0;
  expect(await storm.exited, await new Response(storm.stderr as ReadableStream).text()).toBe(0);
  p.storm = (await lines).at(-1);
  return p;
}

const row = (p: Phase) =>
  `  ${p.name.padEnd(34)} ${Math.round((p.accepted.length / p.wallMs) * 1000)} accepted/s  ${JSON.stringify(p.statuses)}  POST p50 ${pct(p.post, 50).toFixed(0)} / p99 ${pct(p.post, 99).toFixed(0)} ms  GET /healthz p99 ${pct(p.probe, 99).toFixed(0)} ms  storm: ${p.storm.transactions} tx, longest wait ${p.storm.longestWaitMs} ms`;

test("a second process holding write transactions: only 503 STORAGE_UNAVAILABLE with Retry-After, nothing accepted lost", async () => {
  const quiet = await phase("no storm", { durationMs: 500, holdMs: 0, gapMs: 500 });
  const storm = await phase("storm: 5 ms transactions, 1 ms apart", { durationMs: 1_500, holdMs: 5, gapMs: 1 });
  const held = await phase("one transaction held 6.5 s", { durationMs: 1, holdMs: 6_500, gapMs: 0 }, 4);
  const phases = [quiet, storm, held];
  console.log(`SQLITE_BUSY from a second process (binary, 6 senders + a /healthz probe):\n${phases.map(row).join("\n")}`);

  for (const p of phases)
    for (const [status] of Object.entries(p.statuses)) expect(["202", "503 STORAGE_UNAVAILABLE retry-after=1"]).toContain(status);
  expect(held.statuses["503 STORAGE_UNAVAILABLE retry-after=1"] ?? 0).toBeGreaterThan(0); // the busy timeout ran out

  // NB! A job whose outcome could not be committed (its group commit met SQLITE_BUSY) keeps its lease in
  // this live process until the lease expires (60 s), and is then run again: a dispatch sends the message a
  // second time (here the sandbox; a real provider would deliver it twice). The job loop does not retry the
  // commit (reported in docs/reliability.md, "SQLITE_BUSY"). They are counted here, then released by a
  // restart (serve hands back every job a previous process left leased) to keep the test short.
  await Bun.sleep(300); // sandbox sends finish in milliseconds: a job still running now is stranded
  const stranded = sql<{ type: string; n: number }>(`SELECT type, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY type`);
  if (stranded.length) {
    await server.stop();
    server = await serve(init.configPath);
  }
  const accepted = phases.flatMap((p) => p.accepted);
  const t0 = performance.now();
  let left = accepted.length;
  while (left > 0 && performance.now() - t0 < 10_000) {
    await Bun.sleep(50);
    const rows = sql<{ id: string; status: string }>(`SELECT id, status FROM messages WHERE id IN (SELECT value FROM json_each(?))`, JSON.stringify(accepted));
    expect(rows.length).toBe(accepted.length); // stored: a 202 is answered after the commit
    left = rows.filter((r) => r.status === "queued").length;
  }
  console.log(
    `  after the storm: ${accepted.length} accepted, all stored, all out of the queue; jobs left leased by a commit that met SQLITE_BUSY: ${JSON.stringify(Object.fromEntries(stranded.map((r) => [r.type, r.n])))}${stranded.length ? " (released by a restart)" : ""}`,
  );
  expect(left).toBe(0);
  const db = new Database(dbPath(), { readonly: true });
  try {
    expect((db.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
  } finally {
    db.close();
  }
}, 60_000);
