/**
 * What one index or one SET column costs the campaign's writes, in isolation (issue 40's regression split):
 * `./node_modules/.bin/bun bench/index-cost.bench.ts [--rows 500000]`. CPU time of this process; WAL,
 * synchronous NORMAL, batches of 500 per transaction.
 * 1. messages-like rows of one company in creation order, each inserted queued then updated to sent (the
 *    campaign's pattern), with no extra index, (company, created, id), (company, created), or the partial
 *    index of queued messages (an entry at the insert, removed at `sent`).
 * 2. The conversation touch of a campaign message (a fresh conversation, unread_count 0), with and without
 *    `unread_count = unread_count` in its SET and the partial index of unread conversations.
 */
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { parseArgs } from "node:util";

const { values } = parseArgs({ options: { rows: { type: "string", default: "500000" } } });
const N = Number(values.rows);
const tmp = () => `/tmp/sb-index-cost-${process.pid}-${Math.random().toString(36).slice(2)}.db`;
const drop = (f: string) => {
  for (const s of ["", "-wal", "-shm"]) rmSync(f + s, { force: true });
};

const variants: Record<string, string[]> = {
  none: [],
  "company,created,id": ["CREATE INDEX i1 ON m (company_id, created_at, id)"],
  "company,created": ["CREATE INDEX i1 ON m (company_id, created_at)"],
  "queued partial (insert+update to sent)": ["CREATE INDEX i2 ON m (company_id, created_at, id) WHERE status = 'queued'"],
};
const company = crypto.randomUUID();
for (const [name, idx] of Object.entries(variants)) {
  const f = tmp();
  const db = new Database(f);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  db.exec(
    "CREATE TABLE m (id TEXT PRIMARY KEY, company_id TEXT NOT NULL, conversation_id TEXT NOT NULL, status TEXT NOT NULL, content TEXT NOT NULL, created_at INTEGER NOT NULL)",
  );
  db.exec("CREATE INDEX c ON m (conversation_id, id)");
  for (const s of idx) db.exec(s);
  const ins = db.prepare('INSERT INTO m VALUES (?, ?, ?, \'queued\', \'{"template":{"name":"hello_world","values":{"body.1":"friend"}}}\', ?)');
  const upd = db.prepare("UPDATE m SET status = 'sent' WHERE id = ?");
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const t = Date.now();
  for (let i = 0; i < N; i += 500) {
    const ids: string[] = [];
    db.transaction(() => {
      for (let j = 0; j < 500; j++) {
        const id = Bun.randomUUIDv7();
        ids.push(id);
        ins.run(id, company, Bun.randomUUIDv7(), t + Math.floor((i + j) / 4));
      }
    })();
    db.transaction(() => {
      for (const id of ids) upd.run(id);
    })();
  }
  const c = process.cpuUsage(c0);
  console.log(`${name.padEnd(40)} ${((c.user + c.system) / 1e6).toFixed(2)} s CPU, ${((performance.now() - t0) / 1000).toFixed(2)} s wall`);
  db.close();
  drop(f);
}

for (const [name, withIdx, set] of [
  ["SET … unread_count = unread_count, partial index", true, ", unread_count = unread_count"],
  ["SET without unread_count, partial index", true, ""],
  ["SET … unread_count = unread_count, no index", false, ", unread_count = unread_count"],
  ["SET without unread_count, no index", false, ""],
] as const) {
  const f = tmp();
  const db = new Database(f);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  db.exec(
    "CREATE TABLE c (id TEXT PRIMARY KEY, company_id TEXT NOT NULL, contact_id TEXT NOT NULL, last_message_at INTEGER, last_message_id TEXT, unread_count INTEGER NOT NULL DEFAULT 0, updated_at INTEGER NOT NULL)",
  );
  db.exec("CREATE INDEX c1 ON c (company_id, id)");
  if (withIdx) db.exec("CREATE INDEX cu ON c (company_id, id) WHERE unread_count > 0");
  const ids: string[] = [];
  const ins = db.prepare("INSERT INTO c (id, company_id, contact_id, updated_at) VALUES (?, 'co', ?, 0)");
  db.transaction(() => {
    for (let i = 0; i < N; i++) {
      const id = Bun.randomUUIDv7();
      ids.push(id);
      ins.run(id, id);
    }
  })();
  const upd = db.prepare(`UPDATE c SET last_message_at = ?, last_message_id = ?, updated_at = ?${set} WHERE id = ?`);
  const c0 = process.cpuUsage();
  for (let i = 0; i < N; i += 500)
    db.transaction(() => {
      for (let j = i; j < i + 500 && j < N; j++) upd.run(j, ids[j]!, j, ids[j]!);
    })();
  const c = process.cpuUsage(c0);
  console.log(`${name.padEnd(52)} ${((((c.user + c.system) / 1e6) * 1e6) / N).toFixed(2)} µs CPU per touch`);
  db.close();
  drop(f);
}
