/**
 * WAL size under sustained POST /messages (issue 19: the group commit syncs off the event loop, so groups
 * follow each other with no pause; the checkpointer must still get the WAL restarted). Run:
 * `make build && npx bun bench/wal-growth.ts [--seconds 30]` — prints the WAL file's size every 5 s.
 */
import { parseArgs } from "node:util";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { appliance, autocannon, BINARY, fmt } from "./lib";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "30" } } });
const seconds = Number(values.seconds);
const sb = await appliance();
Bun.spawnSync([BINARY, "balance", "credit", "--company", "default", "--amount", "1000000", "--config", `${sb.dir}/config.toml`]);
const find = (dir: string): string | null => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const f = find(p);
      if (f) return f;
    } else if (e.name.endsWith(".db-wal")) return p;
  }
  return null;
};
const body = JSON.stringify({
  channel: "whatsapp",
  to: { phone: "+14155550100" },
  type: "template",
  template: { name: "hello_world", params: { "body.1": "Ann" } },
});
const load = autocannon({
  url: `${sb.url}/api/public/v1/messages`,
  method: "POST",
  body,
  headers: { "content-type": "application/json", authorization: `Bearer ${sb.key}` },
  seconds,
  connections: 50,
});
const sizes: string[] = [];
const timer = setInterval(() => {
  const wal = find(sb.dir);
  sizes.push(wal && existsSync(wal) ? `${fmt(statSync(wal).size / 1e6, 1)} MB` : "-");
}, 5000);
const r = await load;
clearInterval(timer);
console.log(`${fmt(r.rps)} req/s; WAL every 5 s: ${sizes.join(", ")}`);
await sb.stop();
