/**
 * Pipeline list benchmark. Run: `npx bun bench/pipeline.bench.ts` (options: --records N --requests N).
 *
 * 200,000 records in one company (plus 20,000 in another, so the company filter matters), spread over the
 * sales stages like a funnel and over 50 owners, inserted by raw SQL in one transaction. Then, in process
 * (app.handle, sequential, the whole stack: key, rate limit, scope, license, validation, query, JSON):
 * `GET /records?stageId=` for each stage (first page of 50 and a page deep in the list by cursor),
 * `?stageId&ownerId`, `?status=won`. Target (issue 13): `GET /records?stageId=` p95 < 20 ms.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { signLicense } from "../scripts/sign-license";
import { createTestApp } from "../test/helpers/test-app";
import { stageIdOf } from "../src/modules/pipeline/pipeline.config";
import { fmt } from "./lib";

const { values: args } = parseArgs({ options: { records: { type: "string", default: "200000" }, requests: { type: "string", default: "300" } } });
const RECORDS = Number(args.records);
const REQUESTS = Number(args.requests);

const app = await createTestApp({ recordEvents: false, config: { rate_limit: { requests_per_second: 1e9, burst: 1e9 } } });
const devKey = readFileSync(join(import.meta.dir, "../test/fixtures/license-dev.private.key"), "utf8");
writeFileSync(app.config.license.file, signLicense({ company: "default", modules: ["pipeline"], expiresAt: "2099-01-01T00:00:00.000Z", privateKey: devKey }));

// Funnel: most records sit in the early stages.
const stages: [string, string, number][] = [
  ["lead", "open", 0.35],
  ["qualified", "open", 0.2],
  ["proposal", "open", 0.12],
  ["negotiation", "open", 0.08],
  ["won", "won", 0.15],
  ["lost", "lost", 0.1],
];
const cumulative = stages.map((_, i) => stages.slice(0, i + 1).reduce((a, s) => a + s[2], 0));
const sqlite = app.deps.db.$client;
const insert = sqlite.prepare(
  `INSERT INTO pipeline_records (id, company_id, title, contact_id, conversation_id, stage_id, status, value_micros, owner_id, expected_close_date,
     custom_fields, stage_entered_at, won_at, lost_at, contact_deleted_at, created_at, updated_at)
   VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, NULL, '{}', ?, NULL, NULL, NULL, ?, ?)`,
);
let seed = 42;
const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const t0 = performance.now();
app.deps.db.tx(() => {
  const now = Date.now();
  for (let i = 0; i < RECORDS + RECORDS / 10; i++) {
    const company = i < RECORDS ? app.company.id : "other-company";
    const r = rand();
    const s = stages[cumulative.findIndex((c) => r <= c)] ?? stages[0]!;
    insert.run(
      Bun.randomUUIDv7(),
      company,
      `Deal ${i}`,
      `contact-${i % 20_000}`,
      stageIdOf(s[0]),
      s[1],
      1_000_000 * (i % 5000),
      `owner-${i % 50}`,
      now,
      now,
      now,
    );
  }
});
// No ANALYZE: the appliance does not run one either, so the planner sees what it sees in the field.
console.log(`inserted ${fmt(RECORDS)} + ${fmt(RECORDS / 10)} records in ${fmt(performance.now() - t0)} ms`);

async function measure(name: string, url: () => string): Promise<void> {
  for (let i = 0; i < 20; i++) await app.request("GET", url()); // warm-up
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < REQUESTS; i++) {
    const start = performance.now();
    const res = await app.request("GET", url());
    times.push(performance.now() - start);
    if (res.status !== 200) throw new Error(`${url()} → ${res.status} ${JSON.stringify(res.body)}`);
    rows = res.body.data.length;
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
  console.log(`${name.padEnd(52)} rows ${String(rows).padStart(3)}  p50 ${fmt(q(0.5), 2)} ms  p95 ${fmt(q(0.95), 2)} ms  p99 ${fmt(q(0.99), 2)} ms`);
}

let k = 0;
await measure("GET /records?stageId= (each stage in turn)", () => `/records?stageId=${stageIdOf(stages[k++ % stages.length]![0])}`);
const deep = (await app.request("GET", `/records?stageId=${stageIdOf("lead")}&limit=200`)).body.page.nextCursor as string;
await measure("GET /records?stageId=lead&cursor= (second page)", () => `/records?stageId=${stageIdOf("lead")}&cursor=${deep}`);
await measure("GET /records?stageId=negotiation&limit=200", () => `/records?stageId=${stageIdOf("negotiation")}&limit=200`);
await measure("GET /records?stageId=proposal&ownerId=owner-7", () => `/records?stageId=${stageIdOf("proposal")}&ownerId=owner-7`);
await measure("GET /records?status=won", () => `/records?status=won`);
await measure("GET /records (no filter)", () => `/records`);
await app.close();
