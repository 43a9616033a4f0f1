/**
 * What one statement costs the appliance's own CPU on PostgreSQL (issue 35): Bun's client alone, and through the
 * engine's pool (bunsql.ts: the deadline, the portable SQL's translation, rows shaped as SQLite's), with 50
 * statements in flight and one at a time. Run: `./node_modules/.bin/bun bench/pg-statement-cost.ts` (a throwaway
 * PostgreSQL from Debian's package on loopback, as the tests use).
 */
import { SQL } from "bun";
import { postgresServer } from "../test/helpers/postgres";
import { openPgPool } from "../src/db/postgres/bunsql";
const url = await postgresServer();
const sql = new SQL(url, { max: 10, prepare: true });
await sql.unsafe("CREATE TABLE IF NOT EXISTS probe (id int primary key, v text)");
await sql.unsafe("INSERT INTO probe VALUES (1, 'x') ON CONFLICT DO NOTHING");
async function measure(label: string, one: () => Promise<unknown>, n = 20000, conc = 50) {
  for (let i = 0; i < 2000; i++) await one();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  let left = n;
  await Promise.all(
    Array.from({ length: conc }, async () => {
      while (left-- > 0) await one();
    }),
  );
  const c = process.cpuUsage(c0);
  console.log(label.padEnd(40), ((c.user + c.system) / n).toFixed(1), "µs CPU/query;", (((performance.now() - t0) * 1000) / n).toFixed(1), "µs wall/query");
}
await measure("Bun.SQL unsafe().values()", () => sql.unsafe("SELECT v FROM probe WHERE id = $1", ["1"]).values());
await measure("Bun.SQL tagged", () => sql`SELECT v FROM probe WHERE id = ${1}`);
const pool = openPgPool(url, { poolSize: 10 });
await measure("openPgPool .all (our wrapper)", () => pool.all("SELECT v FROM probe WHERE id = ?", [1]));
await measure("Bun.SQL unsafe sequential", () => sql.unsafe("SELECT v FROM probe WHERE id = $1", ["1"]).values(), 10000, 1);
process.exit(0);
