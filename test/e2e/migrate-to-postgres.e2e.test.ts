/**
 * `switchboard migrate-to-postgres` through the compiled binary: an appliance used on SQLite (companies, keys,
 * contacts with unicode names, priced messages read by the sandbox, a credited balance) is stopped, copied into
 * a fresh PostgreSQL database, and served from it with `[storage] driver = "postgres"`: the same key answers
 * the same contacts, balance, ledger, messages and conversations, and a new contact is numbered after the
 * copied ones. Also: refused while the appliance runs, into a database that holds data, for a bad --to; and
 * a copy killed half-way leaves the target empty, so the next run completes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { SQL, spawn } from "bun";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ensureBinary, run, serve, tempDir, until } from "./binary";
import { freshPostgresDatabase, postgresAvailable, POSTGRES_SKIP_REASON } from "../helpers/postgres";
import { POSTGRES_ONLY } from "../../src/cli/migrate-to-postgres.copy";

type Init = { configPath: string; dataDir: string; companyId: string; apiKey: string };

const api = (base: string, key: string) => async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${base}/api/public/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

/** The same config on PostgreSQL: `[storage] driver = "postgres"`, the URL from the environment. */
function postgresConfig(init: Init): string {
  const path = join(init.configPath, "..", "config.postgres.toml");
  const toml = readFileSync(init.configPath, "utf8").replace(/^\[storage\]\n/m, '[storage]\ndriver = "postgres"\nurl = "env:SB_MTP_DATABASE_URL"\n');
  expect(toml).toContain('driver = "postgres"');
  writeFileSync(path, toml);
  return path;
}

function sqliteCounts(init: Init, tables: string[]): Record<string, number> {
  const db = new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
  try {
    return Object.fromEntries(tables.map((t) => [t, (db.query(`SELECT count(*) AS n FROM "${t}"`).get() as { n: number }).n]));
  } finally {
    db.close();
  }
}
async function postgresCounts(url: string, tables: string[]): Promise<Record<string, number>> {
  const sql = new SQL(url, { max: 1 });
  try {
    const out: Record<string, number> = {};
    for (const t of tables) out[t] = Number((await sql.unsafe(`SELECT count(*) AS n FROM "${t}"`))[0].n);
    return out;
  } finally {
    await sql.close();
  }
}

const oneLine = (r: { code: number | null; stderr: string }) => {
  expect(r.code).toBe(1);
  const lines = r.stderr.trim().split("\n");
  expect(lines).toHaveLength(1);
  return lines[0]!;
};

describe.skipIf(!postgresAvailable())(`migrate-to-postgres${postgresAvailable() ? "" : ` (skipped: ${POSTGRES_SKIP_REASON})`}`, () => {
  let dir: string;
  let init: Init;
  let acmeKey: string;
  let url: string;
  const cfg = () => ["--config", init.configPath];
  /** What the appliance answered on SQLite, before it was stopped. */
  let before: Record<string, unknown>;
  const messageIds: string[] = [];
  let busy: ReturnType<typeof run>;

  async function snapshot(base: string) {
    const admin = api(base, init.apiKey);
    const acme = api(base, acmeKey);
    const contacts = [];
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const page = await admin("GET", `/contacts?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.status).toBe(200);
      contacts.push(...page.body.data);
      cursor = page.body.page.nextCursor;
    }
    const get = async (call: ReturnType<typeof api>, path: string) => {
      const r = await call("GET", path);
      expect({ path, status: r.status }).toEqual({ path, status: 200 });
      return r.body;
    };
    const me = await get(admin, "/me");
    const acmeMe = await get(acme, "/me");
    return {
      contacts,
      acmeContacts: (await get(acme, "/contacts")).data,
      // lastUsedAt is the key's own bookkeeping: it moves with every request, on either engine
      me: { ...me, data: { ...me.data, key: { ...me.data.key, lastUsedAt: undefined } } },
      acmeMe: { ...acmeMe, data: { ...acmeMe.data, key: { ...acmeMe.data.key, lastUsedAt: undefined } } },
      ledger: await get(admin, "/billing/ledger"),
      acmeLedger: await get(acme, "/billing/ledger"),
      messages: await Promise.all(messageIds.map((id) => get(admin, `/messages/${id}`))),
      conversations: await get(admin, "/conversations"),
      templates: await get(admin, "/templates?channel=whatsapp"),
      tags: await get(admin, "/tags"),
    };
  }

  beforeAll(async () => {
    dir = tempDir("sb-mtp-e2e-");
    init = JSON.parse(run(["init", "--dir", dir, "--json"]).stdout);
    expect(run(["companies", "create", "--slug", "acme", "--name", "Acmé Ltd", "--balance", "10", ...cfg()]).code).toBe(0);
    acmeKey = JSON.parse(
      run(["keys", "create", "--company", "acme", "--name", "erp ü", "--scopes", "contacts:read,contacts:write,billing:read", "--json", ...cfg()]).stdout,
    ).key;
    expect(run(["balance", "credit", "--company", "acme", "--amount", "2.500000", ...cfg()]).code).toBe(0);

    const server = await serve(init.configPath);
    try {
      const admin = api(server.url, init.apiKey);
      const people = [
        {
          firstName: "Zoë",
          lastName: "Ñúñez-Łukasiewicz",
          city: "São Paulo",
          identities: [{ channel: "whatsapp", value: "+14155550101" }],
          tags: ["vip"],
          customFields: {},
        },
        {
          firstName: "李",
          lastName: "小龙 🙂",
          identities: [
            { channel: "email", value: "li@example.test" },
            { channel: "whatsapp", value: "+14155550102" },
          ],
          tags: ["vip", "asia"],
        },
        { firstName: "O'Brien", lastName: 'say "hi" \\ {x}', identities: [{ channel: "telegram", value: "123456789" }], optIn: true },
        { firstName: "Ελένη", lastName: "Παπαδοπούλου", country: "GR", identities: [{ channel: "email", value: "eleni@example.test" }] },
      ];
      for (const p of people) expect((await admin("POST", "/contacts", p)).status).toBe(201);
      expect(
        (await api(server.url, acmeKey)("POST", "/contacts", { firstName: "Ærø", identities: [{ channel: "email", value: "aero@example.test" }] })).status,
      ).toBe(201);
      for (const phone of ["+14155550101", "+14155550102", "+14155550199"]) {
        const r = await admin("POST", "/messages", {
          channel: "whatsapp",
          to: { phone },
          type: "template",
          template: { name: "hello_world", params: { "body.1": "Zoë" } },
          metadata: { order: "Ø-1" },
        });
        expect(r.status).toBe(202);
        messageIds.push(r.body.data.id);
      }
      await until(
        "every message read",
        async () => {
          const statuses = await Promise.all(messageIds.map(async (id) => (await admin("GET", `/messages/${id}`)).body.data.status));
          return statuses.every((s) => s === "read") || undefined;
        },
        { context: () => server.output().slice(-2000) },
      );
      before = await snapshot(server.url);
      busy = run(["migrate-to-postgres", "--to", "postgres://nobody@127.0.0.1:1/never", ...cfg()]);
    } finally {
      await server.stop();
    }
    url = await freshPostgresDatabase("sb_mtp_e2e");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("refused while the appliance runs on the database (nothing else is tried)", () => {
    expect(oneLine(busy)).toContain("is in use (is switchboard serve running?): stop the service first");
  });

  test("a bad --to: one line naming --to, exit 1", () => {
    expect(oneLine(run(["migrate-to-postgres", "--to", "mysql://u:p@db/x", ...cfg()]))).toContain('--to is not a PostgreSQL URL (it starts with "mysql://")');
    expect(oneLine(run(["migrate-to-postgres", "--to", "env:SB_MTP_UNSET", ...cfg()]))).toBe(
      "switchboard: --to refers to environment variable SB_MTP_UNSET, which is not set",
    );
    expect(oneLine(run(["migrate-to-postgres", "--to", "file:/nonexistent/url", ...cfg()]))).toBe(
      "switchboard: --to refers to file /nonexistent/url, which cannot be read",
    );
    expect(oneLine(run(["migrate-to-postgres", "--to", "postgres://sw:s3cret@127.0.0.1:1/switchboard", ...cfg()]))).toMatch(
      /^switchboard: --to: could not connect to PostgreSQL: .*\(postgres:\/\/sw:\*\*\*@127\.0\.0\.1:1\/switchboard\)$/,
    );
    expect(oneLine(run(["migrate-to-postgres", ...cfg()]))).toContain("--to is required");
    expect(oneLine(run(["migrate-to-postgres", "--to", url, "--bogus", ...cfg()]))).toContain("usage: switchboard migrate-to-postgres");
  });

  test("copies every table into a fresh database: per-table counts match SQLite, the sequence continues", async () => {
    const keysBefore = JSON.parse(run(["keys", "list", "--json", ...cfg()]).stdout);
    const companiesBefore = JSON.parse(run(["companies", "list", "--json", ...cfg()]).stdout);
    const r = run(["migrate-to-postgres", "--to", "env:SB_MTP_TARGET", "--json", ...cfg()], { env: { SB_MTP_TARGET: url } });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    const out = JSON.parse(r.stdout);
    const tables = out.tables.map((t: { table: string }) => t.table);
    const copied = Object.fromEntries(out.tables.map((t: { table: string; rows: number }) => [t.table, t.rows]));
    expect(copied).toEqual(sqliteCounts(init, tables));
    expect(await postgresCounts(url, tables)).toEqual(copied);
    expect(copied).toMatchObject({ companies: 2, contacts: 6, messages: 3, api_keys: 2, ledger_entries: 6 }); // 4 + 1 of acme + 1 made by a send to a new number
    expect(out.rows).toBe(Object.values(copied).reduce((a: number, b) => a + (b as number), 0));
    expect(out.migrationsApplied).toBeGreaterThan(0);
    expect(out.skipped.map((s: { table: string }) => s.table)).toContain("contact_search_state");
    const db = new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
    const maxSeq = (db.query("SELECT max(seq) AS m FROM contacts").get() as { m: number }).m;
    db.close();
    expect(out.sequences).toEqual([{ sequence: "contacts_seq_seq", table: "contacts", column: "seq", value: maxSeq }]);

    // The operator commands read the same on PostgreSQL.
    const pg = ["--config", postgresConfig(init)];
    const env = { SB_MTP_DATABASE_URL: url };
    expect(JSON.parse(run(["keys", "list", "--json", ...pg], { env }).stdout)).toEqual(keysBefore);
    expect(JSON.parse(run(["companies", "list", "--json", ...pg], { env }).stdout)).toEqual(companiesBefore);
  });

  test('`serve` with driver = "postgres" answers as it did on SQLite; a new contact is numbered after the copied ones', async () => {
    const server = await serve(postgresConfig(init), { SB_MTP_DATABASE_URL: url });
    try {
      expect(await snapshot(server.url)).toEqual(before as Awaited<ReturnType<typeof snapshot>>);
      const admin = api(server.url, init.apiKey);
      const created = await admin("POST", "/contacts", {
        firstName: "Nuño",
        lastName: "Après",
        identities: [{ channel: "email", value: "nuno@example.test" }],
      });
      expect(created.status).toBe(201);
      const list = await admin("GET", "/contacts?limit=1");
      expect(list.body.data[0].id).toBe(created.body.data.contact.id);
      const sql = new SQL(url, { max: 1 });
      try {
        const rows = await sql`SELECT id, seq FROM contacts ORDER BY seq DESC LIMIT 2`;
        expect(rows[0].id).toBe(created.body.data.contact.id);
        expect(Number(rows[0].seq)).toBe(Number(rows[1].seq) + 1);
      } finally {
        await sql.close();
      }
      // Still sending and charging from the copied balance.
      const sent = await admin("POST", "/messages", {
        channel: "whatsapp",
        to: { phone: "+14155550101" },
        type: "template",
        template: { name: "hello_world", params: { "body.1": "Zoë" } },
      });
      expect(sent.status).toBe(202);
      const balance = (before.me as { data: { company: { balance: { amount: string } } } }).data.company.balance.amount;
      const me = await admin("GET", "/me");
      expect(Number(me.body.data.company.balance.amount)).toBeCloseTo(Number(balance) - 0.05, 6);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test("a target that already holds data is refused, naming its tables, and left as it was", async () => {
    const counts = await postgresCounts(url, ["companies", "contacts", "messages"]);
    const line = oneLine(run(["migrate-to-postgres", "--to", url, ...cfg()]));
    // Tables in alphabetical order (adapter_state first since the social metrics pull keeps its time there).
    expect(line).toMatch(/the PostgreSQL database already holds data \((\w+, )*companies, /);
    expect(line).toContain("copies into an empty database only");
    expect(await postgresCounts(url, ["companies", "contacts", "messages"])).toEqual(counts);
  });

  test("killed half-way through the copy: the target keeps no row and its schema; the next run completes", async () => {
    // An appliance with enough contacts that the copy takes a while.
    const bigDir = tempDir("sb-mtp-big-");
    try {
      const big: Init = JSON.parse(run(["init", "--dir", bigDir, "--json"]).stdout);
      const db = new Database(join(big.dataDir, "switchboard.db"));
      const contact = db.prepare("INSERT INTO contacts (id, company_id, first_name, last_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)");
      const identity = db.prepare(
        "INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, 'email', ?, 'verified', ?)",
      );
      db.transaction(() => {
        for (let i = 0; i < 40_000; i++) {
          const id = Bun.randomUUIDv7();
          contact.run(id, big.companyId, `Jöhn ${i}`, `Dœ ${i}`, i, i);
          identity.run(big.companyId, id, `j${i}@example.test`, i);
        }
      })();
      contact.finalize();
      identity.finalize();
      db.close(true);

      const target = await freshPostgresDatabase("sb_mtp_kill");
      const sql = new SQL(target, { max: 1 });
      try {
        const proc = spawn([ensureBinary(), "migrate-to-postgres", "--to", target, "--config", big.configPath], { stdout: "pipe", stderr: "pipe" });
        await until("a batch of rows on its way", async () => {
          const [row] =
            await sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'INSERT INTO "contact%'`;
          return Number(row.n) > 0 || proc.exitCode !== null || undefined;
        });
        expect(proc.exitCode).toBeNull(); // still copying when killed
        proc.kill("SIGKILL");
        await proc.exited;
        await until("its session gone", async () => {
          const [row] = await sql`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
          return Number(row.n) === 0 || undefined;
        });
        const tables = ((await sql`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema() `) as { t: string }[])
          .map((r) => r.t)
          .filter((t) => !(t in POSTGRES_ONLY));
        expect(tables.length).toBeGreaterThan(30);
        expect(Object.values(await postgresCounts(target, tables)).reduce((a, b) => a + b, 0)).toBe(0);
        const schema = async () =>
          (
            await sql`SELECT (SELECT count(*) FROM pg_constraint WHERE contype = 'f') AS fks, (SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema()) AS indexes`
          )[0];
        const afterKill = await schema();

        const again = run(["migrate-to-postgres", "--to", target, "--json", "--config", big.configPath]);
        expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: "" });
        const out = JSON.parse(again.stdout);
        expect(out.tables.find((t: { table: string }) => t.table === "contacts").rows).toBe(40_000);
        expect(await postgresCounts(target, tables)).toEqual(sqliteCounts(big, tables));
        expect(await schema()).toEqual(afterKill);
        expect(Number(afterKill.fks)).toBeGreaterThan(15);
      } finally {
        await sql.close();
      }
    } finally {
      rmSync(bigDir, { recursive: true, force: true });
    }
  }, 120_000);
});
