/**
 * kill -9 of the compiled binary during a burst of one-to-one sends to a real provider adapter (Telegram,
 * against its loopback fake behind a 25 ms "network"), then a restart. Requirement: every accepted message
 * reaches a terminal status and is received by the provider; none is lost; a message is sent twice only if
 * its send was in flight at the kill (the provider took it, the appliance died before storing that: the
 * at-least-once of any provider without an idempotency key) — never more than one dispatch wave; no job
 * left leased. Figures printed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort, run, serve, tempDir, until as waitUntil, type RunningServer } from "../e2e/binary";
import { TelegramFake } from "../fakes/telegram.fake";

const USERS = 200;
const TOKEN = "777:kill9-token";
const ACCOUNT = "0193a4b2-0000-7000-8000-00000000f001";
let dir: string;
let configPath: string;
let apiKey: string;
let server: RunningServer;
const tg = TelegramFake.start({ token: TOKEN });
// The provider's network: every call takes 25 ms, so sends are in flight when the kill comes.
const network = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    const url = new URL(req.url);
    if (url.pathname.endsWith("/sendMessage")) await Bun.sleep(25);
    return fetch(`${tg.url}${url.pathname}${url.search}`, {
      method: req.method,
      headers: req.headers,
      body: req.method === "GET" ? undefined : await req.arrayBuffer(),
    });
  },
});

beforeAll(async () => {
  dir = tempDir("sb-kill9-sends-");
  const port = await freePort();
  configPath = join(dir, "config.toml");
  writeFileSync(
    configPath,
    `[server]
listen = "127.0.0.1:${port}"
public_url = "http://127.0.0.1:${port}"

[storage]
data_dir = "./data"

[rate_limit]
requests_per_second = 100000
burst = 100000

[log]
level = "error"

[[channels]]
id = "${ACCOUNT}"
company = "default"
channel = "telegram"
provider = "telegram"
name = "Support bot"
default = true
[channels.settings]
bot_token = "${TOKEN}"
mode = "polling"
base_url = "http://127.0.0.1:${network.port}"
`,
  );
  expect(run(["companies", "create", "--slug", "default", "--name", "Default", "--config", configPath]).code).toBe(0);
  apiKey = JSON.parse(run(["keys", "create", "--company", "default", "--name", "k9", "--json", "--config", configPath]).stdout).key;
  server = await serve(configPath, {}, { port });
});
afterAll(async () => {
  await server?.stop();
  await tg.stop();
  network.stop(true);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const sql = <T = { n: number }>(query: string): T[] => {
  const db = new Database(join(dir, "data", "switchboard.db"), { readonly: true });
  try {
    return db.query(query).all() as T[];
  } finally {
    db.close();
  }
};
/** Dispatches held by a worker: claimed jobs rows, and queued messages held on their own rows. */
const leased = () =>
  sql("SELECT count(*) AS n FROM jobs WHERE status = 'running'")[0]!.n +
  sql("SELECT count(*) AS n FROM messages WHERE status = 'queued' AND lease_token IS NOT NULL")[0]!.n;
const until = <T>(what: string, fn: () => T | undefined) => waitUntil(what, fn, { context: () => server.output().slice(-2000) });
const sent = (i: number) => tg.calls("sendMessage").filter((c) => (c.body as { text?: string }).text === `k9-${i}`).length;

test("kill -9 during a burst of sends to a provider: every message sent, a duplicate only for a send in flight at the kill, nothing leased", async () => {
  // Each user writes first (Telegram: the bot may only answer).
  const now = Math.floor(Date.now() / 1000);
  for (let i = 0; i < USERS; i++)
    tg.queueUpdate({
      message: {
        message_id: 1,
        from: { id: 7000 + i, is_bot: false, first_name: "U", last_name: String(i) },
        chat: { id: 7000 + i, type: "private" },
        date: now,
        text: "hi",
      },
    });
  await until("every user's message stored", () => (sql("SELECT count(*) AS n FROM messages WHERE direction = 'inbound'")[0]!.n === USERS ? true : undefined));

  // The burst: 8 clients; the kill comes once a third of the sends reached the provider.
  const accepted: string[] = [];
  let next = 0;
  let killed = false;
  const client = async () => {
    while (next < USERS && !killed) {
      const i = next++;
      try {
        const res = await fetch(`${server.url}/api/public/v1/messages`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ channel: "telegram", to: { handle: String(7000 + i) }, type: "text", text: `k9-${i}` }),
        });
        if (res.status === 202) accepted.push(((await res.json()) as { data: { id: string } }).data.id);
        else expect(res.status).toBe(202);
      } catch {
        // the connection died with the process: not accepted
      }
    }
  };
  const clients = Array.from({ length: 8 }, client);
  await until("a third of the sends at the provider", () => (tg.calls("sendMessage").length >= USERS / 3 ? true : undefined));
  killed = true;
  server.proc.kill("SIGKILL");
  await server.proc.exited;
  await Promise.all(clients);
  const atKill = { accepted: accepted.length, atProvider: tg.calls("sendMessage").length, leased: leased() };

  server = await serve(configPath, {}, { port: Number(new URL(server.url).port) });
  const ids = accepted.map((id) => `'${id}'`).join(",");
  await until("every accepted message terminal", () =>
    sql(`SELECT count(*) AS n FROM messages WHERE id IN (${ids}) AND status IN ('queued')`)[0]!.n === 0 ? true : undefined,
  );
  await until("no job leased or due", () =>
    sql("SELECT count(*) AS n FROM jobs WHERE type LIKE 'message.%'")[0]!.n + sql("SELECT count(*) AS n FROM messages WHERE status = 'queued'")[0]!.n === 0
      ? true
      : undefined,
  );

  const rows = sql<{ id: string; status: string; content: string }>(`SELECT id, status, content FROM messages WHERE id IN (${ids})`);
  expect(rows).toHaveLength(accepted.length); // nothing accepted was lost
  expect(rows.every((r) => r.status === "sent")).toBe(true);
  const texts = rows.map((r) => (JSON.parse(r.content) as { text: string }).text);
  const counts = texts.map((t) => sent(Number(t.slice(3))));
  expect(counts.every((n) => n >= 1)).toBe(true); // every message reached the provider
  const twice = counts.filter((n) => n > 1).length;
  expect(counts.every((n) => n <= 2)).toBe(true);
  expect(twice).toBeLessThanOrEqual(atKill.leased); // only sends in flight (leased) at the kill
  expect(leased()).toBe(0);
  console.log(
    `kill -9 during a burst of Telegram sends (binary): at the kill ${atKill.accepted} accepted, ${atKill.atProvider} at the provider, ${atKill.leased} dispatch jobs leased; ` +
      `after the restart all ${accepted.length} accepted are sent, each received by the provider (${twice} twice: in flight at the kill), none lost, no job leased`,
  );
}, 90_000);
