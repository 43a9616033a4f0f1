/**
 * Upgrade cost of migration 0011 (a queued message carries its dispatch: two columns and two partial indexes
 * of `messages`): a database at 0010 with N messages (1 % queued), then the migration. Prints the seconds.
 * Run: `npx bun bench/dispatch-migration.bench.ts [N=1000000]`.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openDatabase } from "../src/db/client";
import { embeddedMigrations } from "../src/db/migrations.gen";
import { tempDir } from "./lib";
const N = Number(process.argv[2] ?? 1000000);
const dir = tempDir("sb-mig11-");
const db = openDatabase(join(dir, "x.db"));
const { dialect, session } = db as unknown as { dialect: { migrate: Function }; session: unknown };
const all = embeddedMigrations;
const i11 = all.findIndex((m) => JSON.stringify(m).includes("messages_dispatch_idx"));
dialect.migrate(all.slice(0, i11), session, { migrationsTable: "__drizzle_migrations" });
const s = db.$client;
s.exec("PRAGMA synchronous = OFF");
const ins = s.prepare(`INSERT INTO messages (id, company_id, conversation_id, contact_id, channel, channel_account_id, direction, type, content, address, status, price_type, unit_price, charged, refunded, metadata, created_at, updated_at)
  VALUES (?, 'co', 'conv', 'ct', 'whatsapp', 'acc', 'outbound', 'template', '{"template":{"name":"hello_world","params":{"body.1":"Ann"}}}', '+14155550100', ?, 'utility', 5000, 1, 0, '{}', ?, ?)`);
for (let i = 0; i < N; i += 50000) {
  s.exec("BEGIN");
  for (let j = i; j < Math.min(N, i + 50000); j++) ins.run(Bun.randomUUIDv7(), j % 100 === 0 ? "queued" : "read", j, j);
  s.exec("COMMIT");
}
s.exec("PRAGMA synchronous = FULL");
const t0 = performance.now();
dialect.migrate(all.slice(0, i11 + 1), session, { migrationsTable: "__drizzle_migrations" });
console.log(`migration 0011 on ${N} messages: ${((performance.now() - t0) / 1000).toFixed(2)} s`);
db.close();
rmSync(dir, { recursive: true, force: true });
