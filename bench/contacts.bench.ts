/**
 * Contacts benchmarks. Run: `npx bun bench/contacts.bench.ts` (options: --seconds 10 --connections 32
 * --import-rows 1000000 --list-contacts 1000000 --tags 100 --list-requests 500; --skip-upsert / --skip-import / --skip-list / --shuffle).
 *
 * 1. Upserts/s over HTTP (loopback, keep-alive, N concurrent connections from a separate Bun process that
 *    runs a fetch pool): POST /contacts with a new e-mail identity per request, vs a bare Elysia route in the
 *    same server process doing one INSERT (same pragmas: WAL, synchronous=FULL) measured in the same run.
 * 2. NDJSON import into the compiled binary (`make build` first; `serve` as in production, with its WAL
 *    checkpointer and import worker threads): the file is generated, POSTed (streamed) to /contacts/import,
 *    and polled until the import completes; rows/s over the whole (upload + processing), the server's peak
 *    RSS (VmHWM), and the latency of API requests made one at a time while the import runs.
 *    --shuffle hashes the e-mail and phone values (random b-tree positions, as real lists have).
 *    BENCH_PROGRESS=<ms> prints progress, RSS and CPU seconds per server thread at that interval.
 * 3. `GET /contacts?tag=X&limit=50` (and no filter, and `q`) latency (server side, app.handle, no socket)
 *    on a database with --list-contacts contacts and --tags tags, seeded with raw prepared inserts.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Elysia, t } from "elysia";
import { openDatabase } from "../src/db/client";
import { newId } from "../src/platform/ids";
import { createTestApp, type TestApp } from "../test/helpers/test-app";
import { appliance, rssMb } from "./lib";

const { values: args } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    connections: { type: "string", default: "32" },
    "import-rows": { type: "string", default: "1000000" },
    "list-contacts": { type: "string", default: "1000000" },
    tags: { type: "string", default: "100" },
    "list-requests": { type: "string", default: "500" },
    "skip-upsert": { type: "boolean", default: false },
    "skip-import": { type: "boolean", default: false },
    "skip-list": { type: "boolean", default: false },
    shuffle: { type: "boolean", default: false },
  },
});
const SECONDS = Number(args.seconds);
const CONNECTIONS = Number(args.connections);
const IMPORT_ROWS = Number(args["import-rows"]);
const LIST_CONTACTS = Number(args["list-contacts"]);
const TAGS = Number(args.tags);
const LIST_REQUESTS = Number(args["list-requests"]);
const SHUFFLE = args.shuffle;

const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const mb = (b: number) => `${fmt(b / 1024 / 1024, 0)} MB`;

// A fetch pool in its own process, so the load generator does not share the server's event loop.
const loadSource = `
const [url, key, seconds, connections, prefix] = process.argv.slice(1);
const end = performance.now() + Number(seconds) * 1000;
let ok = 0, bad = 0, n = 0;
const lat = [];
async function worker(w) {
  while (performance.now() < end) {
    const i = n++;
    const body = JSON.stringify({ firstName: "Load", lastName: "Test" + i, identities: [{ channel: "email", value: prefix + w + "-" + i + "@bench.test" }] });
    const t0 = performance.now();
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + key }, body });
    await res.arrayBuffer();
    lat.push(performance.now() - t0);
    if (res.status === 200 || res.status === 201) ok++; else { bad++; if (bad < 3) console.error(res.status); }
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: Number(connections) }, (_, w) => worker(w)));
const elapsed = (performance.now() - t0) / 1000;
lat.sort((a, b) => a - b);
console.log(JSON.stringify({ ok, bad, rps: ok / elapsed, p50: lat[Math.floor(lat.length * 0.5)], p99: lat[Math.floor(lat.length * 0.99)] }));
`;

async function load(url: string, key: string, prefix: string) {
  const proc = Bun.spawn([process.execPath, "--eval", loadSource, url, key, String(SECONDS), String(CONNECTIONS), prefix], {
    stdout: "pipe",
    stderr: "inherit",
  });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return JSON.parse(out.trim().split("\n").pop()!) as { ok: number; bad: number; rps: number; p50: number; p99: number };
}

function bareServer() {
  const dir = mkdtempSync(join(tmpdir(), "sb-bare-"));
  const db = openDatabase(join(dir, "bare.db"));
  if (SYNC) db.$client.exec(`PRAGMA synchronous = ${SYNC}`);
  db.$client.exec("CREATE TABLE bare (id TEXT PRIMARY KEY, body TEXT NOT NULL, created_at INTEGER NOT NULL)");
  const insert = db.$client.prepare("INSERT INTO bare (id, body, created_at) VALUES (?, ?, ?)");
  const app = new Elysia()
    .post(
      "/bare",
      ({ body, set }) => {
        const id = newId();
        db.tx(() => insert.run(id, JSON.stringify(body), Date.now()));
        set.status = 201;
        return { data: { id } };
      },
      { body: t.Object({ identities: t.Array(t.Object({ channel: t.String(), value: t.String() })) }, { additionalProperties: true }) },
    )
    .listen({ hostname: "127.0.0.1", port: 0 });
  return { url: `http://127.0.0.1:${app.server!.port}/bare`, stop: () => (app.stop(), db.close(), rmSync(dir, { recursive: true, force: true })) };
}

const SYNC = process.env.BENCH_SYNC; // diagnosis only: e.g. NORMAL, to see what the fsyncs cost
const CACHE_MB = process.env.BENCH_CACHE_MB; // diagnosis only: SQLite page cache (the app's default is 2 MB)
async function makeApp(): Promise<TestApp> {
  const app = await createTestApp({ recordEvents: false, config: { rate_limit: { requests_per_second: 1_000_000, burst: 1_000_000 } } });
  if (SYNC) app.deps.db.$client.exec(`PRAGMA synchronous = ${SYNC}`);
  if (CACHE_MB) app.deps.db.$client.exec(`PRAGMA cache_size = -${Number(CACHE_MB) * 1024}`);
  return app;
}

function listen(app: TestApp) {
  app.app.listen({ hostname: "127.0.0.1", port: 0, maxRequestBodySize: 4 * 1024 * 1024 * 1024 });
  return `http://127.0.0.1:${app.app.server!.port}/api/public/v1`;
}

const results: string[] = [];
const report = (line: string) => {
  console.log(line);
  results.push(line);
};

// ------------------------------------------------------------------------------------------ 1. upserts
if (!args["skip-upsert"]) {
  const app = await makeApp();
  const base = listen(app);
  const bare = bareServer();
  await load(bare.url, app.key, "warm"); // warm up both once (JIT, page cache)
  await load(`${base}/contacts`, app.key, "warm");
  const b = await load(bare.url, app.key, "bare");
  const u = await load(`${base}/contacts`, app.key, "upsert");
  report(`upsert: ${CONNECTIONS} connections, ${SECONDS}s each, loopback`);
  report(`  bare insert route : ${fmt(b.rps)} req/s (p50 ${fmt(b.p50, 1)} ms, p99 ${fmt(b.p99, 1)} ms, errors ${b.bad})`);
  report(`  POST /contacts    : ${fmt(u.rps)} req/s (p50 ${fmt(u.p50, 1)} ms, p99 ${fmt(u.p99, 1)} ms, errors ${u.bad})`);
  report(`  ratio upsert/bare : ${fmt(u.rps / b.rps, 2)}× (target ≥ 0.5×)`);
  bare.stop();
  app.app.stop();
  await app.close().catch(() => {});
}

// ------------------------------------------------------------------------------------------ 2. import (compiled binary)
if (!args["skip-import"]) {
  const sb = await appliance();
  const api = `${sb.url}/api/public/v1`;
  const auth = { authorization: `Bearer ${sb.key}` };
  const file = join(sb.dir, "bench-import.ndjson");
  const w = Bun.file(file).writer();
  for (let i = 0; i < IMPORT_ROWS; i++) {
    const local = SHUFFLE ? Bun.hash(String(i)).toString(36) : `user${i}`;
    w.write(
      JSON.stringify({
        firstName: `First${i % 5000}`,
        lastName: `Last${i}`,
        identities: [
          { channel: "email", value: `${local}@import.bench` },
          { channel: "whatsapp", value: `+49151${String(SHUFFLE ? Number(Bun.hash(`p${i}`) % 100_000_000n) : i).padStart(8, "0")}` },
        ],
        tags: [`tag${i % TAGS}`],
      }) + "\n",
    );
    if (i % 10000 === 0) await w.flush();
  }
  await w.end();
  const size = Bun.file(file).size;
  const rssBefore = rssMb(sb.pid);
  // A probe beside the import: one API request at a time, to see how long requests wait while it runs.
  let importing = true;
  const probe: number[] = [];
  const prober = (async () => {
    while (importing) {
      const t = performance.now();
      await (await fetch(`${api}/contacts?limit=1`, { headers: auth })).arrayBuffer();
      probe.push(performance.now() - t);
      await Bun.sleep(20);
    }
  })();
  const t0 = performance.now();
  const res = await fetch(`${api}/contacts/import`, { method: "POST", headers: { ...auth, "content-type": "application/x-ndjson" }, body: Bun.file(file) });
  const { data } = (await res.json()) as { data: { id: string } };
  const uploaded = performance.now();
  const rssUploaded = rssMb(sb.pid);
  let imp: { status: string; created: number; updated: number; failed: number };
  for (;;) {
    imp = ((await (await fetch(`${api}/contacts/imports/${data.id}`, { headers: auth })).json()) as { data: typeof imp }).data;
    if (imp.status === "completed" || imp.status === "failed") break;
    if (process.env.BENCH_PROGRESS) {
      const threads = readdirSync(`/proc/${sb.pid}/task`).map((tid) => {
        const st = readFileSync(`/proc/${sb.pid}/task/${tid}/stat`, "utf8");
        const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
        return `${st.slice(st.indexOf("(") + 1, st.lastIndexOf(")"))}:${(Number(f[11]) + Number(f[12])) / 100}`;
      });
      console.log(
        `${((performance.now() - t0) / 1000).toFixed(1)} s: ${(imp as { processed?: number }).processed} rows, RSS ${fmt(rssMb(sb.pid))} MB; cpu s ${threads.filter((t) => !t.endsWith(":0")).join(" ")}`,
      );
    }
    await Bun.sleep(process.env.BENCH_PROGRESS ? Number(process.env.BENCH_PROGRESS) : 100);
  }
  const t1 = performance.now();
  importing = false;
  await prober;
  const peak = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${sb.pid}/status`, "utf8"))![1]) / 1024;
  await sb.stop();
  rmSync(sb.dir, { recursive: true, force: true });
  probe.sort((a, b) => a - b);
  const secs = (t1 - t0) / 1000;
  report(
    `import (compiled binary, serve): ${fmt(IMPORT_ROWS)} NDJSON rows (${mb(size)}), 2 identities + 1 tag per row, ${SHUFFLE ? "random (hashed) e-mails and phones" : "sequential-ish e-mails and phones"}`,
  );
  report(`  status ${imp.status}: created ${fmt(imp.created)}, updated ${fmt(imp.updated)}, failed ${fmt(imp.failed)}`);
  report(`  upload ${fmt((uploaded - t0) / 1000, 1)} s, total ${fmt(secs, 1)} s → ${fmt(IMPORT_ROWS / secs)} rows/s (target ≥ 20,000/s)`);
  report(`  server peak RSS (VmHWM) ${fmt(peak)} MB (RSS before the import ${fmt(rssBefore)} MB, after the upload ${fmt(rssUploaded)} MB; target < 300 MB)`);
  report(
    `  GET /contacts?limit=1 during the import: p50 ${fmt(probe[Math.floor(probe.length / 2)]!, 1)} ms, p99 ${fmt(probe[Math.floor(probe.length * 0.99)]!, 1)} ms, max ${fmt(probe.at(-1)!, 1)} ms (${probe.length} requests)`,
  );
}

// ------------------------------------------------------------------------------------------ 3. list
if (!args["skip-list"]) {
  const app = await makeApp();
  // LIST_CONTACTS contacts from raw prepared inserts (one identity and one tag per contact).
  const sqlite = app.deps.db.$client;
  const companyId = app.company.id;
  const now = Date.now();
  const tagIds: string[] = [];
  for (let k = 0; k < TAGS; k++) {
    const found = sqlite.query("SELECT id FROM tags WHERE company_id = ? AND name = ?").get(companyId, `tag${k}`) as { id: string } | null;
    const id = found?.id ?? newId();
    if (!found) sqlite.query("INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, ?)").run(id, companyId, `tag${k}`, now);
    tagIds.push(id);
  }
  const ic = sqlite.prepare(
    "INSERT INTO contacts (id, company_id, first_name, last_name, custom_fields, blocked, created_at, updated_at) VALUES (?, ?, ?, ?, '{}', 0, ?, ?)",
  );
  const ii = sqlite.prepare(
    "INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, 'email', ?, 'verified', ?)",
  );
  const it = sqlite.prepare("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, ?)");
  const t0 = performance.now();
  const todo = LIST_CONTACTS;
  sqlite.exec("PRAGMA synchronous = OFF");
  for (let start = 0; start < todo; start += 50_000) {
    app.deps.db.tx(() => {
      for (let i = start; i < Math.min(todo, start + 50_000); i++) {
        const id = newId();
        ic.run(id, companyId, `Seed${i % 5000}`, `S${i}`, now, now);
        ii.run(companyId, id, `seed${i}@list.bench`, now);
        it.run(id, tagIds[i % TAGS]!, now);
      }
    });
  }
  sqlite.exec("PRAGMA synchronous = FULL");
  sqlite.exec("ANALYZE");
  const total = (sqlite.query("SELECT count(*) AS n FROM contacts").get() as { n: number }).n;
  report(`list: ${fmt(total)} contacts (raw-seeded in ${fmt((performance.now() - t0) / 1000, 1)} s), ${TAGS} tags`);
  const plan = sqlite
    .query(
      "EXPLAIN QUERY PLAN SELECT c.id FROM contact_tags t0 JOIN contacts c ON c.id = t0.contact_id WHERE t0.tag_id = ? AND c.company_id = ? AND c.deleted_at IS NULL ORDER BY t0.contact_id DESC LIMIT 51",
    )
    .all(tagIds[0]!, companyId) as { detail: string }[];
  report(`  plan: ${plan.map((p) => p.detail).join(" | ")}`);
  const measure = async (label: string, url: (i: number) => string) => {
    for (let i = 0; i < 20; i++) await app.request("GET", url(i)); // warm-up
    const lat: number[] = [];
    for (let i = 0; i < LIST_REQUESTS; i++) {
      const t = performance.now();
      const r = await app.request("GET", url(i));
      lat.push(performance.now() - t);
      if (r.status !== 200 || r.body.data.length !== 50) throw new Error(`list: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    }
    lat.sort((a, b) => a - b);
    const p = (q: number) => fmt(lat[Math.min(lat.length - 1, Math.floor(lat.length * q))]!, 2);
    report(`  ${label}: p50 ${p(0.5)} ms, p95 ${p(0.95)} ms, p99 ${p(0.99)} ms over ${LIST_REQUESTS} requests`);
  };
  await measure("GET /contacts?tag=X&limit=50 (random tag)", (i) => `/contacts?tag=tag${(i * 37) % TAGS}&limit=50`);
  await measure("GET /contacts?limit=50 (no filter)    ", () => `/contacts?limit=50`);
  await measure("GET /contacts?q=<name prefix>&limit=50", (i) => `/contacts?q=seed${(i * 7) % 5000}&limit=50`);
  await app.close().catch(() => {});
}

console.log("\n" + results.join("\n"));
