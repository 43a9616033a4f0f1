/**
 * `switchboard migrate-to-postgres` on a stopped appliance with N contacts (each: 2 identities, a consent, a
 * tag; names with accents and custom fields), through the compiled binary: prints rows/s as the command
 * reports it and the wall time of the whole command (schema migration and verification included).
 *
 * Run: `make build && ./node_modules/.bin/bun bench/migrate-to-postgres.bench.ts [--contacts 300000] [--to URL]`
 * `--to` names a PostgreSQL server database to create databases on (e.g. postgres://postgres@127.0.0.1:5432/postgres);
 * without it the tests' throwaway server is used (test/helpers/postgres.ts: fsync off — say so with the figure).
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { run, tempDir } from "../test/e2e/binary";
import { freshPostgresDatabase } from "../test/helpers/postgres";

const { values } = parseArgs({ options: { contacts: { type: "string", default: "300000" }, to: { type: "string" } } });
const N = Number(values.contacts);

async function targetDatabase(): Promise<string> {
  if (!values.to) return freshPostgresDatabase("sb_bench");
  const name = `sb_bench_${process.pid}_${Date.now().toString(36)}`;
  const admin = new SQL(values.to, { max: 1 });
  await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
  await admin.close();
  const url = new URL(values.to);
  url.pathname = `/${name}`;
  return url.toString();
}

const dir = tempDir("sb-mtp-bench-");
try {
  const init = JSON.parse(run(["init", "--dir", dir, "--json"]).stdout) as { configPath: string; dataDir: string; companyId: string };
  const db = new Database(join(init.dataDir, "switchboard.db"));
  db.exec("PRAGMA synchronous = OFF");
  const co = init.companyId;
  const tag = db.prepare("INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, 0)");
  for (let k = 0; k < 100; k++) tag.run(`t${k}`, co, `tag${k}`);
  const ic = db.prepare(
    "INSERT INTO contacts (id, company_id, first_name, last_name, city, country, custom_fields, created_at, updated_at) VALUES (?, ?, ?, ?, 'München', 'DE', ?, ?, ?)",
  );
  const ii = db.prepare("INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, ?, ?, 'verified', ?)");
  const icn = db.prepare(
    "INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES (?, 'whatsapp', ?, 'opted_in', 'api', ?)",
  );
  const it = db.prepare("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, ?)");
  const t0 = Date.now();
  for (let i = 0; i < N; i += 50_000) {
    db.exec("BEGIN");
    for (let j = i; j < Math.min(N, i + 50_000); j++) {
      const id = Bun.randomUUIDv7();
      const at = t0 + j;
      ic.run(id, co, `José${j % 5000}`, `Müller-Lüdenscheidt ${j}`, JSON.stringify({ plan: j % 2 ? "pro" : "free", note: `say "hi" \\ ${j}` }), at, at);
      ii.run(co, id, "email", `u${j}@example.test`, at);
      ii.run(co, id, "whatsapp", `+49151${String(j).padStart(8, "0")}`, at);
      icn.run(id, co, at);
      it.run(id, `t${j % 100}`, at);
    }
    db.exec("COMMIT");
  }
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  for (const s of [tag, ic, ii, icn, it]) s.finalize();
  db.close(true); // NB! an unfinalized statement keeps the file open (and locked) after a plain close()

  const url = await targetDatabase();
  const started = performance.now();
  const r = run(["migrate-to-postgres", "--to", url, "--config", init.configPath, "--json"]);
  const wall = (performance.now() - started) / 1000;
  if (r.code !== 0) throw new Error(`migrate-to-postgres failed (${r.code}): ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { rows: number; ms: number; rowsPerSecond: number; tables: { table: string; rows: number; ms: number }[] };
  const big = out.tables
    .filter((t) => t.rows >= 1000)
    .map((t) => `${t.table} ${t.rows} rows in ${(t.ms / 1000).toFixed(1)} s (${Math.round(t.rows / (t.ms / 1000))}/s)`);
  console.log(`${N} contacts: ${out.rows} rows copied in ${(out.ms / 1000).toFixed(1)} s = ${out.rowsPerSecond} rows/s; whole command ${wall.toFixed(1)} s`);
  for (const line of big) console.log(`  ${line}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
