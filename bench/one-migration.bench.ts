/**
 * Upgrade cost of one migration that rewrites or indexes a large table: a database migrated up to the one
 * before it, N rows written, then that migration alone. Prints the seconds.
 * Run: `npx bun bench/one-migration.bench.ts <migration> [N=1000000]`, with <migration> one of:
 *   0011_messages_dispatch   two columns and two partial indexes of `messages` (N messages, 1 % queued)
 *   0012_ledger_by_company   `ledger_entries` rebuilt WITHOUT ROWID, keyed by company (N entries)
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import type { Database } from "bun:sqlite";
import journal from "../migrations/meta/_journal.json";
import { openDatabase } from "../src/db/client";
import { embeddedMigrations } from "../src/db/migrations.gen";
import { tempDir } from "./lib";

/** Row j of the table the migration rewrites (written in transactions of 50,000). */
const fills: Record<string, (s: Database) => (j: number) => void> = {
  "0011_messages_dispatch": (s) => {
    const ins =
      s.prepare(`INSERT INTO messages (id, company_id, conversation_id, contact_id, channel, channel_account_id, direction, type, content, address, status, price_type, unit_price, charged, refunded, metadata, created_at, updated_at)
      VALUES (?, 'co', 'conv', 'ct', 'whatsapp', 'acc', 'outbound', 'template', '{"template":{"name":"hello_world","params":{"body.1":"Ann"}}}', '+14155550100', ?, 'utility', 5000, 1, 0, '{}', ?, ?)`);
    return (j) => ins.run(Bun.randomUUIDv7(), j % 100 === 0 ? "queued" : "read", j, j);
  },
  "0012_ledger_by_company": (s) => {
    s.exec("INSERT INTO companies (id, slug, name, created_at) VALUES ('co', 'co', 'Co', 0)");
    const ins = s.prepare(`INSERT INTO ledger_entries (id, company_id, kind, amount, balance_after, message_id, description, created_at)
      VALUES (?, 'co', 'debit', -5000, ?, ?, 'WhatsApp template (utility)', ?)`);
    return (j) => ins.run(Bun.randomUUIDv7(), 1e12 - j * 5000, Bun.randomUUIDv7(), j);
  },
};

const tag = process.argv[2] ?? "";
const N = Number(process.argv[3] ?? 1000000);
const fill = fills[tag];
const at = journal.entries.findIndex((e) => e.tag === tag);
if (!fill || at < 0) throw new Error(`usage: bench/one-migration.bench.ts <${Object.keys(fills).join(" | ")}> [N]`);
const dir = tempDir("sb-one-migration-");
const db = openDatabase(join(dir, "x.db"));
const { dialect, session } = db as unknown as { dialect: { migrate: (...args: unknown[]) => unknown }; session: unknown };
dialect.migrate(embeddedMigrations.slice(0, at), session, { migrationsTable: "__drizzle_migrations" });
const s = db.$client;
s.exec("PRAGMA synchronous = OFF");
const row = fill(s);
for (let i = 0; i < N; i += 50000) {
  s.exec("BEGIN");
  for (let j = i; j < Math.min(N, i + 50000); j++) row(j);
  s.exec("COMMIT");
}
s.exec("PRAGMA synchronous = FULL");
const t0 = performance.now();
dialect.migrate(embeddedMigrations.slice(0, at + 1), session, { migrationsTable: "__drizzle_migrations" });
console.log(`migration ${tag} on ${N} rows: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
db.close();
rmSync(dir, { recursive: true, force: true });
