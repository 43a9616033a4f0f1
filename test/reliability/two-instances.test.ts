/**
 * Two compiled binaries on one PostgreSQL writing at once (DESIGN §15, issue 35): no cluster-wide lock, so
 * each invariant is held by its own rows — the balance by its guarded row, idempotency keys and
 * find-or-create by unique keys (the request that loses the race runs again). The outcome must be exact.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { run, serve, tempDir, type RunningServer } from "../e2e/binary";
import { freshPostgresDatabase, postgresAvailable } from "../helpers/postgres";

const available = postgresAvailable();
let dir: string;
let sql: SQL;
let key: string;
const servers: RunningServer[] = [];

beforeAll(async () => {
  if (!available) return;
  dir = tempDir("sb-two-");
  const url = await freshPostgresDatabase("sb_two");
  const config = (name: string) => {
    const path = join(dir, `${name}.toml`);
    writeFileSync(
      path,
      `[storage]\ndata_dir = "${join(dir, name)}"\ndriver = "postgres"\nurl = "${url}"\n\n[rate_limit]\nrequests_per_second = 100000\nburst = 100000\n
[[channels]]\nid = "0193a4b2-0000-7000-8000-000000000001"\ncompany = "default"\nchannel = "whatsapp"\nprovider = "sandbox"\nname = "WhatsApp (sandbox)"\ndefault = true\n`,
    );
    return path;
  };
  const [a, b] = [config("a"), config("b")];
  expect(run(["migrate", "--config", a]).code).toBe(0);
  expect(run(["companies", "create", "--slug", "default", "--name", "Default", "--config", a]).code).toBe(0);
  key = JSON.parse(run(["keys", "create", "--company", "default", "--name", "two", "--json", "--config", a]).stdout).key;
  expect(run(["balance", "credit", "--company", "default", "--amount", "1.500000", "--config", a]).code).toBe(0); // 30 sends at 0.050000
  servers.push(await serve(a), await serve(b));
  sql = new SQL(url, { max: 2 });
});
afterAll(async () => {
  for (const s of servers) await s.stop();
  await sql?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const hello = { name: "hello_world", params: { "body.1": "Ann" } };
function post(server: RunningServer, path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${server.url}/api/public/v1${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as any, headers: r.headers }));
}
const n = async (query: string) => Number((await sql.unsafe(query))[0].n);

test.skipIf(!available)("80 priced sends at once across two instances for a balance of 30: exactly 30 accepted, the balance 0, the rest 402", async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  const results = await Promise.all(
    Array.from({ length: 80 }, (_, i) =>
      post(i % 2 ? b : a, "/messages", { channel: "whatsapp", to: { phone: `+1415555${String(2000 + i)}` }, type: "template", template: hello }),
    ),
  );
  const statuses = results.map((r) => r.status);
  expect(statuses.filter((s) => s === 202)).toHaveLength(30);
  expect(statuses.filter((s) => s === 402)).toHaveLength(50);
  expect(await n("SELECT amount AS n FROM balances")).toBe(0);
  expect(await n("SELECT count(*) AS n FROM messages WHERE direction = 'outbound'")).toBe(30);
  expect(await n("SELECT count(*) AS n FROM ledger_entries WHERE kind = 'debit'")).toBe(30);
  expect(await n("SELECT min(balance_after) AS n FROM ledger_entries")).toBe(0);
});

test.skipIf(!available)("one new address from both instances at once: one contact, one open conversation, every send accepted", async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  expect(run(["balance", "credit", "--company", "default", "--amount", "10.000000", "--config", join(dir, "a.toml")]).code).toBe(0);
  for (let round = 0; round < 5; round++) {
    const to = { phone: `+1415555${String(3900 + round)}` };
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => post(i % 2 ? b : a, "/messages", { channel: "whatsapp", to, type: "template", template: hello })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(202));
    expect(new Set(results.map((r) => r.body.data.contactId)).size).toBe(1);
    expect(await n(`SELECT count(*) AS n FROM contact_identities WHERE value = '${to.phone}'`)).toBe(1);
    expect(await n(`SELECT count(*) AS n FROM conversations WHERE status = 'open' AND contact_id = '${results[0]!.body.data.contactId}'`)).toBe(1);
  }
});

test.skipIf(!available)("one Idempotency-Key sent to both instances at once: one message; the others replay it or 409", async () => {
  const [a, b] = servers as [RunningServer, RunningServer];
  for (let round = 0; round < 5; round++) {
    const body = { channel: "whatsapp", to: { phone: `+1415555${String(4900 + round)}` }, type: "template", template: hello };
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => post(i % 2 ? b : a, "/messages", body, { "idempotency-key": `two-${round}` })));
    const first = results.filter((r) => r.status === 202 && r.headers.get("idempotent-replayed") !== "true");
    expect(first).toHaveLength(1);
    for (const r of results) {
      if (r.status === 202) expect(r.body.data.id).toBe(first[0]!.body.data.id);
      else expect(r.status).toBe(409);
    }
    expect(await n(`SELECT count(*) AS n FROM messages WHERE address = '${body.to.phone}'`)).toBe(1);
  }
});
