/**
 * Query plans of the soak's reads on PostgreSQL over a filled company (issue 42 item 1, the PostgreSQL side of
 * `EXPLAIN QUERY PLAN` in bench/RESULTS.md). Run: `./node_modules/.bin/bun bench/pg-plans.ts [--contacts 1000000]`.
 * A throwaway database with the appliance's schema; one company with N contacts (one of tags t0–t6 each) and as
 * many conversations (10 % open), and a small one (1,000 of each, all older: its pages must not walk the first's); ANALYZE (autovacuum's would, after such a load); then `EXPLAIN (ANALYZE,
 * BUFFERS)` of GET /contacts?tag=, ?tag=a,b (match any), GET /conversations and its unread filter, each with
 * its time. The statements are the stores' text with PostgreSQL's placeholders.
 */
import { SQL } from "bun";
import { parseArgs } from "node:util";
import { migratePostgresAsync } from "../src/db/postgres/migrate";
import { freshPostgresDatabase, postgresAvailable, POSTGRES_SKIP_REASON } from "../test/helpers/postgres";
import { fmt } from "./lib";

const { values } = parseArgs({ options: { contacts: { type: "string", default: "1000000" } } });
const N = Number(values.contacts);
if (!postgresAvailable()) throw new Error(POSTGRES_SKIP_REASON);
const url = await freshPostgresDatabase("sb_plans");
await migratePostgresAsync(url, { version: "bench" });
const pg = new SQL(url, { max: 1 });
const company = "c0000000-0000-7000-8000-000000000001";
const t0 = performance.now();
await pg.unsafe(`INSERT INTO companies (id, slug, name, created_at) VALUES ('${company}', 'bench', 'Bench', 0)`);
await pg.unsafe(`INSERT INTO tags (id, company_id, name, created_at) SELECT 'tag-' || i, '${company}', 't' || i, 0 FROM generate_series(0, 6) i`);
// Ids sort as they were made (as UUID v7 do): a zero-padded counter.
await pg.unsafe(
  `INSERT INTO contacts (seq, id, company_id, first_name, created_at, updated_at)
   SELECT i, 'ct-' || lpad(i::text, 9, '0'), '${company}', 'n' || i, i, i FROM generate_series(1, ${N}) i`,
);
await pg.unsafe(
  `INSERT INTO contact_tags (contact_id, tag_id, created_at) SELECT 'ct-' || lpad(i::text, 9, '0'), 'tag-' || (i % 7), i FROM generate_series(1, ${N}) i`,
);
await pg.unsafe(
  `INSERT INTO conversations (id, company_id, contact_id, channel, channel_account_id, status, last_message_at, created_at, updated_at, unread_count)
   SELECT 'cv-' || lpad(i::text, 9, '0'), '${company}', 'ct-' || lpad(i::text, 9, '0'), 'whatsapp', 'acc', CASE WHEN i % 10 = 0 THEN 'open' ELSE 'closed' END, i, i, i,
          CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END
   FROM generate_series(1, ${N}) i`,
);
// A second, small company whose rows are all older than the first's: its pages must not walk the first's rows.
const small = "c0000000-0000-7000-8000-000000000002";
await pg.unsafe(`INSERT INTO companies (id, slug, name, created_at) VALUES ('${small}', 'small', 'Small', 0)`);
await pg.unsafe(
  `INSERT INTO contacts (seq, id, company_id, first_name, created_at, updated_at)
   SELECT ${N} + i, 'ca-' || lpad(i::text, 9, '0'), '${small}', 'n' || i, i, i FROM generate_series(1, 1000) i`,
);
await pg.unsafe(
  `INSERT INTO conversations (id, company_id, contact_id, channel, channel_account_id, status, last_message_at, created_at, updated_at, unread_count)
   SELECT 'ca-' || lpad(i::text, 9, '0'), '${small}', 'ca-' || lpad(i::text, 9, '0'), 'whatsapp', 'acc', 'open', i, i, i, 0 FROM generate_series(1, 1000) i`,
);
await pg.unsafe("ANALYZE");
console.log(`filled ${fmt(N)} contacts and conversations in ${fmt((performance.now() - t0) / 1000, 1)} s`);

const COLUMNS = "c.id, c.company_id, c.first_name, c.last_name, c.city, c.country, c.custom_fields, c.blocked, c.created_at, c.updated_at";
const plans: [string, string, unknown[]][] = [
  [
    "GET /contacts?tag=t3&limit=50",
    `SELECT ${COLUMNS} FROM contact_tags t0 CROSS JOIN contacts c WHERE t0.tag_id = $1 AND c.id = t0.contact_id AND c.company_id = $2 AND c.deleted_at IS NULL ORDER BY t0.contact_id DESC LIMIT $3`,
    ["tag-3", company, 51],
  ],
  [
    "GET /contacts?tag=t1,t2&match=any&limit=50",
    `SELECT ${COLUMNS} FROM contacts c WHERE c.company_id = $1 AND c.deleted_at IS NULL AND c.id IN (SELECT contact_id FROM contact_tags WHERE tag_id IN (SELECT value FROM json_array_elements_text($2::json) AS j(value))) ORDER BY c.id DESC LIMIT $3`,
    [company, ["tag-1", "tag-2"], 51], // (Bun.SQL encodes a json parameter itself)
  ],
  ["GET /contacts?limit=50", `SELECT ${COLUMNS} FROM contacts c WHERE c.company_id = $1 AND c.deleted_at IS NULL ORDER BY c.id DESC LIMIT $2`, [company, 51]],
  ["GET /conversations?limit=20", "SELECT * FROM conversations WHERE company_id = $1 ORDER BY id DESC LIMIT $2", [company, 21]],
  [
    "the small company's GET /contacts?limit=50",
    `SELECT ${COLUMNS} FROM contacts c WHERE c.company_id = $1 AND c.deleted_at IS NULL ORDER BY c.id DESC LIMIT $2`,
    [small, 51],
  ],
  ["the small company's GET /conversations?limit=20", "SELECT * FROM conversations WHERE company_id = $1 ORDER BY id DESC LIMIT $2", [small, 21]],
  [
    "GET /conversations?unread=true&limit=20",
    "SELECT * FROM conversations WHERE company_id = $1 AND unread_count > 0 ORDER BY id DESC LIMIT $2",
    [company, 21],
  ],
  [
    "GET /conversations?status=open&limit=20",
    "SELECT * FROM conversations WHERE company_id = $1 AND status = $2 ORDER BY id DESC LIMIT $3",
    [company, "open", 21],
  ],
];
for (const [name, text, args] of plans) {
  const rows = (await pg.unsafe(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, args as never[])) as { "QUERY PLAN": string }[];
  console.log(`\n${name}\n${rows.map((r) => `  ${r["QUERY PLAN"]}`).join("\n")}`);
}
await pg.close();
