/**
 * Campaign benchmark (issue 11). Run: `make build && ./node_modules/.bin/bun bench/campaigns.bench.ts [--contacts 1000000] [--seconds 10] [--estimate-only]`.
 * On the compiled appliance (fresh `init`, sandbox WhatsApp with sent_after_ms = 0 so the sandbox's own
 * 50 ms "network" delay does not cap the run; delivered/read reports as init writes them), with N opted-in
 * contacts tagged `all` written straight into the database before `serve`:
 * 1. POST /campaigns/estimate over the whole tag audience (best and median of 3) ÷ a bare
 *    `SELECT count(*)` of the tag's contacts on the same file, same run.
 * 2. POST /messages p99 at 10 connections with the appliance idle, then while the campaign runs: the ratio.
 * 3. The campaign: time until no recipient is pending (every one sent, delivered or read), peak RSS.
 */
import { Database } from "bun:sqlite";
import { spawn, spawnSync } from "bun";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { autocannon, BINARY, fmt, freePort, initAppliance, rssMb, waitFor } from "./lib";

const { values } = parseArgs({
  options: {
    contacts: { type: "string", default: "1000000" },
    seconds: { type: "string", default: "10" },
    "estimate-only": { type: "boolean", default: false },
  },
});
const N = Number(values.contacts);
const seconds = Number(values.seconds);

const { dir, key, ...init } = initAppliance({ credit: "1000000" });
// No sandbox send delay on the WhatsApp account (the first [[channels]] entry init writes).
const toml = readFileSync(init.configPath, "utf8").replace(
  'channel = "whatsapp"\nprovider = "sandbox"\nname = "WhatsApp (sandbox)"\ndefault = true\n',
  (m) => `${m}[channels.settings]\nsent_after_ms = 0\n`,
);
if (!toml.includes("sent_after_ms = 0")) throw new Error("could not set the sandbox's sent_after_ms");
writeFileSync(init.configPath, toml);

// ---- seed N contacts: identity, consent, tag (what a bulk import would leave)
const dbPath = join(init.dataDir, "switchboard.db");
{
  const t0 = performance.now();
  const db = new Database(dbPath);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  const at = Date.now();
  const tagId = Bun.randomUUIDv7();
  db.query("INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, 'all', ?)").run(tagId, init.companyId, at);
  const c = db.prepare("INSERT INTO contacts (id, company_id, first_name, custom_fields, blocked, created_at, updated_at) VALUES (?, ?, ?, '{}', 0, ?, ?)");
  const i = db.prepare(
    "INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, 'whatsapp', ?, 'verified', ?)",
  );
  const k = db.prepare(
    "INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES (?, 'whatsapp', ?, 'opted_in', 'import', ?)",
  );
  const g = db.prepare("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, ?)");
  for (let done = 0; done < N; ) {
    const n = Math.min(50_000, N - done);
    db.transaction(() => {
      for (let j = 0; j < n; j++) {
        const id = Bun.randomUUIDv7();
        c.run(id, init.companyId, `C${done + j}`, at, at);
        i.run(init.companyId, id, `+1${String(2_000_000_000 + done + j)}`, at);
        k.run(id, init.companyId, at);
        g.run(id, tagId, at);
      }
    })();
    done += n;
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  console.log(`seeded ${fmt(N)} contacts in ${fmt((performance.now() - t0) / 1000, 1)} s`);
}

const port = await freePort();
const proc = spawn([BINARY, "serve", "--config", init.configPath], {
  env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, SWITCHBOARD_LOG_LEVEL: "warn" },
  stdout: "ignore",
  stderr: "inherit",
});
const url = `http://127.0.0.1:${port}`;
await waitFor(`${url}/healthz`, 30_000);
const api = async (method: string, path: string, body?: unknown) => {
  const r = await fetch(`${url}/api/public/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return (await r.json()) as any;
};

try {
  const templateId = (await api("GET", "/templates?channel=whatsapp")).data.find((t: { name: string }) => t.name === "hello_world").id;
  const request = { templateId, audience: { type: "tags", tags: ["all"], match: "any" }, askValues: { "body.1": '{{contact.firstName | "friend"}}' } };

  // ---- 1. estimate
  const ro = new Database(dbPath, { readonly: true });
  const countMs: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t = performance.now();
    ro.query("SELECT count(*) FROM contact_tags WHERE tag_id = (SELECT id FROM tags WHERE name = 'all')").get();
    countMs.push(performance.now() - t);
  }
  ro.close();
  const estMs: number[] = [];
  let est: any;
  for (let r = 0; r < 3; r++) {
    const t = performance.now();
    est = await api("POST", "/campaigns/estimate", request);
    estMs.push(performance.now() - t);
  }
  const med = (a: number[]) => [...a].sort((x, y) => x - y)[1]!;
  console.log(
    `estimate over ${fmt(est.data.matched)} contacts: best ${fmt(Math.min(...estMs))} ms, median ${fmt(med(estMs))} ms (target < 1,000 ms); sendable ${fmt(est.data.sendable)}`,
  );
  console.log(`bare count(*) of the tag   : best ${fmt(Math.min(...countMs), 1)} ms  → estimate ÷ count ${fmt(Math.min(...estMs) / Math.min(...countMs), 1)}×`);
  if (!values["estimate-only"]) {
    // ---- 2a. POST /messages p99, idle
    const send = JSON.stringify({
      channel: "whatsapp",
      to: { phone: "+14155550100" },
      type: "template",
      template: { name: "hello_world", params: { "body.1": "Ann" } },
    });
    const load = () =>
      autocannon({
        url: `${url}/api/public/v1/messages`,
        method: "POST",
        body: send,
        headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
        seconds,
        connections: 10,
      });
    await autocannon({
      url: `${url}/api/public/v1/messages`,
      method: "POST",
      body: send,
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      seconds: 2,
      connections: 10,
    });
    const idle = await load();

    // ---- 3. the campaign
    let peak = rssMb(proc.pid);
    let peakAt = 0;
    const t0 = performance.now();
    const created = await api("POST", "/campaigns", { name: "bench", ...request });
    const id = created.data.id as string;
    const createMs = performance.now() - t0;
    const sampler = setInterval(() => {
      const rss = rssMb(proc.pid);
      if (rss > peak) (peak = rss), (peakAt = (performance.now() - t0) / 1000);
    }, 250);
    // ---- 2b. the same load while it runs
    await Bun.sleep(3000);
    const busy = await load();
    // The fan-out's own rate from here on (the load above took its share of the loop).
    const tAlone = performance.now();
    const at = (await api("GET", `/campaigns/${id}`)).data.stats;
    const pendingAlone = est.data.sendable - (at.sent + at.delivered + at.read + at.failed); // (the audience may still be resolving)
    let d: any;
    for (;;) {
      d = (await api("GET", `/campaigns/${id}`)).data;
      if (d.stats.pending === 0 && d.status === "completed") break;
      await Bun.sleep(50); // (at 500 ms the figure moved in steps of ~5 % on a 10 s run)
    }
    const doneAt = performance.now();
    const totalS = (doneAt - t0) / 1000;
    const aloneS = (doneAt - tAlone) / 1000;
    clearInterval(sampler);
    const s = d.stats;
    console.log(`campaign create (incl. its estimate): ${fmt(createMs)} ms`);
    console.log(
      `campaign of ${fmt(s.matched)}: no recipient pending after ${fmt(totalS, 1)} s = ${fmt(s.matched / totalS)} recipients/s (target < 180 s at 1M); sent ${fmt(s.sent)} delivered ${fmt(s.delivered)} read ${fmt(s.read)} failed ${fmt(s.failed)}`,
    );
    console.log(`  after the one-to-one load : ${fmt(pendingAlone)} pending, done in ${fmt(aloneS, 1)} s = ${fmt(pendingAlone / aloneS)} recipients/s`);
    console.log(`peak RSS during the campaign: ${fmt(peak)} MB at ${fmt(peakAt, 1)} s (target < 300 MB)`);
    console.log(`POST /messages idle        : ${fmt(idle.rps)} req/s  p50 ${idle.p50} ms  p99 ${idle.p99} ms`);
    console.log(`POST /messages during it   : ${fmt(busy.rps)} req/s  p50 ${busy.p50} ms  p99 ${busy.p99} ms  (non-2xx ${busy.non2xx})`);
    console.log(`p99 ratio busy ÷ idle      : ${fmt(busy.p99 / Math.max(idle.p99, 1), 2)} (target ≤ 3)`);
  }
} finally {
  proc.kill("SIGTERM");
  await proc.exited;
  spawnSync(["rm", "-rf", dir]);
}
