/**
 * Segments benchmark (issue 37, DESIGN §19). Run: `./node_modules/.bin/bun bench/segments.bench.ts [--contacts 1000000] [--runs 5]`.
 *
 * A temp-file SQLite appliance (the test app: real migrations, pragmas and audience-count worker threads; requests
 * through app.handle, no socket) seeded with raw prepared inserts: every contact has a verified WhatsApp identity;
 * 10 % live in Istanbul (the rest in 9 other cities), 70 % opted in on WhatsApp, 20 % opted out, the rest unknown;
 * half wrote in on the WhatsApp account at some time in the last 90 days; 1 % blocked. Then, best and median of
 * `--runs`, the 3-condition filter of the docs' worked example (opted-in Istanbul customers who wrote in the last
 * 30 days):
 *   1. POST /segments/count
 *   2. POST /campaigns/estimate with `{type: "filter"}` (the same members, counted by send facts)
 *   3. GET /segments/{id}/contacts?limit=50 (first page)
 */
import { parseArgs } from "node:util";
import { ACCOUNTS, createTestApp } from "../test/helpers/test-app";

const { values } = parseArgs({ options: { contacts: { type: "string", default: "1000000" }, runs: { type: "string", default: "5" } } });
const N = Number(values.contacts);
const RUNS = Number(values.runs);
const fmt = (n: number, d = 0) => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const app = await createTestApp({ recordEvents: false, balance: "1000000.000000" });
const DAY = 86_400_000;
const CITIES = ["Istanbul", "Ankara", "Izmir", "Bursa", "Antalya", "London", "Berlin", "Paris", "Madrid", "Rome"];
{
  const t0 = performance.now();
  const db = app.deps.db.$client;
  const now = app.clock.now().getTime();
  const companyId = app.company.id;
  const c = db.prepare(
    "INSERT INTO contacts (id, company_id, first_name, city, custom_fields, blocked, created_at, updated_at) VALUES (?, ?, ?, ?, '{}', ?, ?, ?)",
  );
  const i = db.prepare(
    "INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, 'whatsapp', ?, 'verified', ?)",
  );
  const k = db.prepare("INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES (?, 'whatsapp', ?, ?, 'import', ?)");
  const s = db.prepare("INSERT INTO contact_channel_state (contact_id, channel_account_id, company_id, last_inbound_at, updated_at) VALUES (?, ?, ?, ?, ?)");
  // mulberry32: repeatable, and without the correlation of successive values a small LCG has.
  let seed = 42;
  const rnd = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  for (let done = 0; done < N; ) {
    const n = Math.min(50_000, N - done);
    db.transaction(() => {
      for (let j = 0; j < n; j++) {
        const id = Bun.randomUUIDv7();
        c.run(id, companyId, `C${done + j}`, rnd() < 0.1 ? "Istanbul" : CITIES[1 + Math.floor(rnd() * 9)]!, rnd() < 0.01 ? 1 : 0, now, now);
        i.run(companyId, id, `+1${String(2_000_000_000 + done + j)}`, now);
        const r = rnd();
        if (r < 0.9) k.run(id, companyId, r < 0.7 ? "opted_in" : "opted_out", now);
        if (rnd() < 0.5) s.run(id, ACCOUNTS.whatsapp, companyId, now - Math.floor(rnd() * 90 * DAY), now);
      }
    })();
    done += n;
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  console.log(`seeded ${fmt(N)} contacts in ${fmt((performance.now() - t0) / 1000, 1)} s`);
}

const filter = {
  all: [
    { field: "consent.whatsapp", op: "eq", value: "opted_in" },
    { field: "city", op: "eq", value: "Istanbul" },
    { field: "lastInboundAt", op: "gte", value: "-P30D" },
  ],
};
async function timed<T>(name: string, f: () => Promise<T>): Promise<T> {
  const ms: number[] = [];
  let last!: T;
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    last = await f();
    ms.push(performance.now() - t0);
  }
  console.log(`${name}: best ${fmt(Math.min(...ms))} ms, median ${fmt(med(ms))} ms`);
  return last;
}
try {
  const count = await timed("POST /segments/count (3 conditions)", () => app.request("POST", "/segments/count", { body: { filter } }));
  console.log(`  count ${fmt(count.body.data.count)}`);
  const templateId = (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;
  const est = await timed("POST /campaigns/estimate {type: filter}", () =>
    app.request("POST", "/campaigns/estimate", { body: { templateId, askValues: { "body.1": "friend" }, audience: { type: "filter", filter } } }),
  );
  console.log(`  matched ${fmt(est.body.data.matched)}, sendable ${fmt(est.body.data.sendable)}, excluded ${JSON.stringify(est.body.data.excluded)}`);
  const seg = await app.request("POST", "/segments", { body: { name: "bench", filter } });
  await timed("GET /segments/{id}/contacts?limit=50", () => app.request("GET", `/segments/${seg.body.data.id}/contacts?limit=50`));
  const t0 = performance.now();
  const bare = app.deps.db.$client.query("SELECT count(*) AS n FROM contacts WHERE company_id = ? AND deleted_at IS NULL").get(app.company.id) as { n: number };
  console.log(`bare count(*) of the company's ${fmt(bare.n)} contacts: ${fmt(performance.now() - t0, 1)} ms`);
} finally {
  await app.close();
}
