/**
 * Two compiled binaries on one PostgreSQL (DESIGN §15), a burst of one-to-one sends to a real provider
 * adapter (Telegram, against its loopback fake behind a 25 ms "network") split across both, kill -9 of the
 * leader in the middle. The client does what a load balancer's client does: a request to the dead instance
 * is sent again to the other one, with the same Idempotency-Key.
 *
 * Requirement: every accepted message is stored once and reaches the provider; none is lost; a message is
 * sent twice only if its send was in flight at the kill (the at-least-once of a provider without an
 * idempotency key — the dead instance's leased jobs run again when their lease expires); nothing is charged
 * twice; the account's send rate holds for both instances together; the leader moves: the survivor takes the lock and the Telegram long polling that only the leader runs
 * (a user's message written after the kill arrives). Figures printed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run, serve, tempDir, until as waitUntil, type RunningServer } from "../e2e/binary";
import { TelegramFake } from "../fakes/telegram.fake";
import { freshPostgresDatabase, postgresAvailable } from "../helpers/postgres";

const USERS = 200;
const LEASE_SECONDS = 5;
const TOKEN = "778:ha-token";
const ACCOUNT = "0193a4b2-0000-7000-8000-00000000f0a1";
const available = postgresAvailable();
let dir: string;
let url: string;
let db: SQL;
let apiKey: string;
const servers: RunningServer[] = [];
const tg = TelegramFake.start({ token: TOKEN });
// The provider's network: every send takes 25 ms, so sends are in flight when the kill comes.
const sendTimes: number[] = [];
const network = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(req) {
    const u = new URL(req.url);
    if (u.pathname.endsWith("/sendMessage")) {
      sendTimes.push(performance.now());
      await Bun.sleep(25);
    }
    return fetch(`${tg.url}${u.pathname}${u.search}`, {
      method: req.method,
      headers: req.headers,
      body: req.method === "GET" ? undefined : await req.arrayBuffer(),
    });
  },
});

/** One instance's config: its own data dir (another VM), the shared database. */
function config(name: string): string {
  const data = join(dir, name);
  mkdirSync(data, { recursive: true });
  const path = join(data, "config.toml");
  writeFileSync(
    path,
    `[storage]
data_dir = "${data}"
driver = "postgres"
url = "${url}"

[jobs]
lease_seconds = ${LEASE_SECONDS}

[rate_limit]
requests_per_second = 100000
burst = 100000

[log]
level = "info"

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
  return path;
}

beforeAll(async () => {
  if (!available) return;
  dir = tempDir("sb-pg-ha-");
  url = await freshPostgresDatabase("sb_ha");
  const a = config("a");
  expect(run(["migrate", "--config", a]).code).toBe(0);
  expect(run(["companies", "create", "--slug", "default", "--name", "Default", "--config", a]).code).toBe(0);
  apiKey = JSON.parse(run(["keys", "create", "--company", "default", "--name", "ha", "--json", "--config", a]).stdout).key;
  db = new SQL(url, { max: 2 });
});
afterAll(async () => {
  for (const s of servers) if (s.proc.exitCode === null) await s.stop();
  await db?.close();
  await tg.stop();
  network.stop(true);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const count = async (query: string): Promise<number> => Number((await db.unsafe(query))[0].count);
/** Dispatches held by a worker: claimed jobs rows, and queued messages held on their own rows. */
const leased = async () =>
  (await count("SELECT count(*) FROM jobs WHERE status = 'running'")) +
  (await count("SELECT count(*) FROM messages WHERE status = 'queued' AND lease_token IS NOT NULL"));
const output = () => servers.map((s, i) => `--- instance ${i}\n${s.output().slice(-1500)}`).join("\n");
const until = <T>(what: string, fn: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000) => waitUntil(what, fn, { timeoutMs, context: output });
const LEADS = "this instance leads the scheduled work";
const userUpdate = (user: number, text: string) => ({
  message: {
    message_id: user,
    from: { id: user, is_bot: false, first_name: "U", last_name: String(user) },
    chat: { id: user, type: "private" },
    date: Math.floor(Date.now() / 1000),
    text,
  },
});

test.skipIf(!available)(
  "two instances on one PostgreSQL, kill -9 of the leader mid-burst: nothing lost, nothing sent twice but in-flight sends, the leader moves",
  async () => {
    const a = await serve(config("a"));
    servers.push(a);
    await until("instance a leads", () => (a.output().includes(LEADS) ? true : undefined));
    const b = await serve(config("b"));
    servers.push(b);

    // Each user writes first (Telegram: the bot may only answer); only the leader polls.
    for (let i = 0; i < USERS; i++) tg.queueUpdate(userUpdate(8000 + i, "hi"));
    await until("every user's message stored", async () =>
      (await count("SELECT count(*) FROM messages WHERE direction = 'inbound'")) === USERS ? true : undefined,
    );
    expect(b.output()).not.toContain(LEADS);

    // The burst: 8 clients, request i to instance i % 2; a request the dead instance cannot answer goes to b.
    const accepted = new Map<number, string>();
    const attempts = { a: 0, b: 0, retried: 0 };
    let next = 0;
    const post = (server: RunningServer, i: number) =>
      fetch(`${server.url}/api/public/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", "idempotency-key": `ha-${i}` },
        body: JSON.stringify({ channel: "telegram", to: { handle: String(8000 + i) }, type: "text", text: `ha-${i}` }),
      });
    const client = async () => {
      while (next < USERS) {
        const i = next++;
        let res: Response;
        try {
          attempts[i % 2 ? "b" : "a"]++;
          res = await post(i % 2 ? b : a, i);
        } catch {
          attempts.retried++;
          res = await post(b, i); // the load balancer's retry: same key, the surviving instance
        }
        expect(res.status).toBe(202);
        accepted.set(i, ((await res.json()) as { data: { id: string } }).data.id);
        await Bun.sleep(10); // a steady stream, so requests are in flight to a when it dies
      }
    };
    const clients = Array.from({ length: 8 }, client);
    await until("a third accepted, sends at the provider", () => (accepted.size >= USERS / 3 && tg.calls("sendMessage").length >= 10 ? true : undefined));
    a.proc.kill("SIGKILL");
    await a.proc.exited;
    const atKill = { atProvider: tg.calls("sendMessage").length, leased: await leased() };
    await Promise.all(clients);
    expect(accepted.size).toBe(USERS);

    // The leader moves: b takes the lock, and its long polling picks up a message written after the kill.
    await until("instance b leads", () => (b.output().includes(LEADS) ? true : undefined));
    tg.queueUpdate(userUpdate(9999, "after the kill"));
    await until("the new leader's polling stored the message written after the kill", async () =>
      (await count("SELECT count(*) FROM messages WHERE direction = 'inbound'")) === USERS + 1 ? true : undefined,
    );

    // The dead instance's leases expire; b runs its jobs again.
    const ids = [...accepted.values()].map((id) => `'${id}'`).join(",");
    await until(
      "every accepted message terminal",
      async () => ((await count(`SELECT count(*) FROM messages WHERE id IN (${ids}) AND status = 'queued'`)) === 0 ? true : undefined),
      60_000,
    );
    await until("no dispatch job left", async () => ((await count("SELECT count(*) FROM jobs WHERE type LIKE 'message.%'")) === 0 ? true : undefined), 30_000);

    expect(new Set(accepted.values()).size).toBe(USERS); // an idempotent retry answered with its own message
    expect(await count(`SELECT count(*) FROM messages WHERE direction = 'outbound'`)).toBe(USERS); // stored once each
    expect(await count(`SELECT count(*) FROM messages WHERE id IN (${ids}) AND status = 'sent'`)).toBe(USERS); // none lost
    expect(
      await count(`SELECT count(*) FROM (SELECT message_id FROM ledger_entries WHERE message_id IS NOT NULL GROUP BY message_id HAVING count(*) > 1) AS twice`),
    ).toBe(0);
    const received = [...accepted.keys()].map((i) => tg.calls("sendMessage").filter((c) => (c.body as { text?: string }).text === `ha-${i}`).length);
    expect(received.every((n) => n >= 1)).toBe(true); // every message reached the provider
    expect(received.every((n) => n <= 2)).toBe(true);
    const twice = received.filter((n) => n > 1).length;
    expect(twice).toBeLessThanOrEqual(atKill.leased); // only sends in flight (leased) at the kill
    expect(await leased()).toBe(0);
    // The account's send rate (Telegram's default, 20/s) held for both instances together, not 20/s each.
    const busiestSecond = Math.max(...sendTimes.map((t) => sendTimes.filter((u) => u >= t && u < t + 1000).length));
    expect(busiestSecond).toBeLessThanOrEqual(23);
    console.log(
      `two instances on PostgreSQL, kill -9 of the leader: ${attempts.a} requests to a, ${attempts.b} to b, ${attempts.retried} sent again to b after the kill; ` +
        `at the kill ${atKill.atProvider} at the provider, ${atKill.leased} dispatch jobs leased; all ${USERS} accepted once, sent, each received by the provider ` +
        `(${twice} twice: in flight at the kill), none lost, none charged twice; at most ${busiestSecond} sends in any second (account limit 20/s); b took the lead and its polling received`,
    );
  },
  120_000,
);
