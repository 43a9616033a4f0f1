/**
 * Upgrade cost: a 0.1.0 database (first migration only) with N contacts (2 identities and a tag each, raw
 * inserts) is brought to the current schema with migrate(); prints the seconds it took.
 * Run: `npx bun bench/migration.bench.ts [N=1000000]`.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { embeddedMigrations } from "../src/db/migrations.gen";
const N = Number(process.argv[2] ?? 1000000);
const db = openDatabase(join(mkdtempSync(join(tmpdir(), "mig-")), "x.db"));
const { dialect, session } = db as unknown as { dialect: { migrate: (...args: unknown[]) => unknown }; session: unknown };
dialect.migrate(embeddedMigrations.slice(0, 1), session, { migrationsTable: "__drizzle_migrations" });
const s = db.$client;
s.exec("INSERT INTO companies (id, name, slug, created_at) VALUES ('co', 'Co', 'co', 0)");
for (let k = 0; k < 100; k++) s.query("INSERT INTO tags (id, company_id, name, created_at) VALUES (?, 'co', ?, 0)").run(`t${k}`, `tag${k}`);
const ic = s.prepare("INSERT INTO contacts (id, company_id, first_name, last_name, created_at, updated_at) VALUES (?, 'co', ?, ?, 0, 0)");
const ii = s.prepare(
  "INSERT INTO contact_identities (id, company_id, contact_id, channel, value, status, created_at) VALUES (?, 'co', ?, ?, ?, 'verified', 0)",
);
const it = s.prepare("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, 0)");
s.exec("PRAGMA synchronous = OFF");
for (let i = 0; i < N; i += 50000) {
  s.exec("BEGIN");
  for (let j = i; j < Math.min(N, i + 50000); j++) {
    const id = Bun.randomUUIDv7();
    ic.run(id, `First${j % 5000}`, `Last${j}`);
    ii.run(Bun.randomUUIDv7(), id, "email", `u${j}@x.test`);
    ii.run(Bun.randomUUIDv7(), id, "whatsapp", `+49151${String(j).padStart(8, "0")}`);
    it.run(id, `t${j % 100}`);
  }
  s.exec("COMMIT");
}
s.exec("PRAGMA synchronous = FULL");
const t0 = performance.now();
migrate(db);
console.log(`migrated ${N} contacts in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
