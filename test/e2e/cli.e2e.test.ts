/** The operator CLI (DESIGN §2) through the compiled binary, and one full appliance life cycle. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { run, serve, tempDir } from "./binary";

let dir: string;
let init: { configPath: string; dataDir: string; companyId: string; apiKey: string };

beforeAll(() => {
  dir = tempDir();
  const r = run(["init", "--dir", dir, "--json"]);
  expect(r.code).toBe(0);
  init = JSON.parse(r.stdout);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("init", () => {
  test("writes a sandbox config for every channel and social platform, and prints a working key", () => {
    expect(init.configPath).toBe(join(dir, "config.toml"));
    expect(init.apiKey).toMatch(/^sb_live_[A-Za-z0-9]{40}$/);
    const toml = Bun.TOML.parse(readFileSync(init.configPath, "utf8")) as any;
    expect(toml.channels.map((c: any) => c.channel).sort()).toEqual(["email", "instagram", "messenger", "telegram", "tiktok", "whatsapp", "x"]);
    expect(toml.channels.every((c: any) => c.provider === "sandbox" && /^[0-9a-f-]{36}$/.test(c.id))).toBe(true);
    expect(toml.social_accounts.map((s: any) => s.platform).sort()).toEqual(["facebook", "instagram", "tiktok", "x"]);
    expect(existsSync(join(init.dataDir, "switchboard.db"))).toBe(true);
  });

  test("refuses to overwrite an existing config (exit 1, one line)", () => {
    const r = run(["init", "--dir", dir]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain("already exists");
  });
});

describe("operator commands", () => {
  const cfg = () => ["--config", init.configPath];

  test("companies create/list with balance, keys create/list/revoke, balance credit", () => {
    const c = run(["companies", "create", "--slug", "acme", "--name", "Acme Ltd", "--balance", "10.5", "--json", ...cfg()]);
    expect(c.code).toBe(0);
    expect(JSON.parse(c.stdout)).toMatchObject({ slug: "acme", balance: { amount: "10.500000", unit: "USD" } });

    const list = JSON.parse(run(["companies", "list", "--json", ...cfg()]).stdout);
    expect(list.map((x: any) => x.slug)).toEqual(["acme", "default"]);

    const k = JSON.parse(
      run([
        "keys",
        "create",
        "--company",
        "acme",
        "--name",
        "erp",
        "--scopes",
        "messages:send,contacts:read",
        "--allow-ip",
        "10.0.0.0/8,::1",
        "--rate-limit",
        "5",
        "--json",
        ...cfg(),
      ]).stdout,
    );
    expect(k).toMatchObject({ company: "acme", name: "erp", scopes: ["messages:send", "contacts:read"], allowedIps: ["10.0.0.0/8", "::1"], rateLimit: 5 });
    expect(k.key).toStartWith(k.prefix);

    const keys = JSON.parse(run(["keys", "list", "--company", "acme", "--json", ...cfg()]).stdout);
    expect(keys).toHaveLength(1);
    expect(JSON.stringify(keys)).not.toContain(k.key);

    expect(run(["keys", "revoke", k.id, ...cfg()]).code).toBe(0);
    expect(JSON.parse(run(["keys", "list", "--company", "acme", "--json", ...cfg()]).stdout)[0].revokedAt).not.toBeNull();

    const b = JSON.parse(run(["balance", "credit", "--company", "acme", "--amount", "25.000000", "--json", ...cfg()]).stdout);
    expect(b.balance.amount).toBe("35.500000");
  });

  test.each([
    [["keys", "create"], "--company is required"],
    [["keys", "create", "--company", "nope"], 'no company with slug "nope"'],
    [["keys", "create", "--company", "default", "--scopes", "bogus:scope"], 'unknown scope "bogus:scope"'],
    [["keys", "create", "--company", "default", "--allow-ip", "300.1.1.1"], "is not an IPv4/IPv6 address or CIDR"],
    [["keys", "create", "--company", "default", "--expires-at", "tomorrow"], "--expires-at"],
    [["balance", "credit", "--company", "default", "--amount", "-3"], "--amount"],
    [["companies", "create", "--slug", "Bad Slug", "--name", "x"], "slug"],
    [["companies", "create", "--slug", "default", "--name", "x"], "already exists"],
    [["companies", "frobnicate"], "usage"],
    [["keys", "revoke"], "usage"],
    [["jobs", "retry", "nope"], "no dead job"],
    [["backup"], "--to is required"],
    [["companies", "list", "--bogus"], "Unknown option"],
  ])("misuse %p exits 1 with one line", (args, message) => {
    const r = run([...(args as string[]), "--config", init.configPath]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(message as string);
  });

  test("unknown command and missing config exit 1", () => {
    expect(run(["frobnicate"]).code).toBe(1);
    const r = run(["companies", "list", "--config", join(dir, "missing.toml")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not found");
  });

  test("a bad config names the key, the value and what is expected", () => {
    const bad = join(dir, "bad.toml");
    writeFileSync(bad, '[server]\nlisten = "nowhere"\n');
    let r = run(["migrate", "--config", bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('key "server.listen" has value "nowhere"');
    writeFileSync(bad, '[billing]\ncurrency = "USD"\n[billing.prices]\ntg_text = "cheap"\n');
    r = run(["migrate", "--config", bad]);
    expect(r.stderr).toContain('key "billing.prices.tg_text" has value "cheap"');
    writeFileSync(bad, "[storage]\ndata_dir = 12\n");
    expect(run(["migrate", "--config", bad]).stderr).toContain('key "storage.data_dir" has value 12');
    writeFileSync(bad, '[storage]\ndata_dir = "env:SB_TEST_UNSET_VAR"\n');
    expect(run(["migrate", "--config", bad]).stderr).toContain("SB_TEST_UNSET_VAR, which is not set");
    writeFileSync(bad, "[storage\n");
    expect(run(["migrate", "--config", bad]).stderr).toContain("invalid TOML: Expected ']'");
  });

  test("env: indirection and SWITCHBOARD_DATA_DIR", () => {
    const other = join(dir, "other-data");
    const cfgPath = join(dir, "env.toml");
    writeFileSync(cfgPath, '[storage]\ndata_dir = "env:SB_TEST_DATA"\n');
    expect(run(["migrate", "--config", cfgPath], { env: { SB_TEST_DATA: other } }).code).toBe(0);
    expect(existsSync(join(other, "switchboard.db"))).toBe(true);
    const viaEnv = join(dir, "override-data");
    expect(run(["migrate", "--config", cfgPath], { env: { SB_TEST_DATA: other, SWITCHBOARD_DATA_DIR: viaEnv } }).code).toBe(0);
    expect(existsSync(join(viaEnv, "switchboard.db"))).toBe(true);
  });

  test("SWITCHBOARD_CONFIG is used when --config is absent; migrate is idempotent", () => {
    const r = run(["migrate"], { env: { SWITCHBOARD_CONFIG: init.configPath } });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("0 migration(s) applied");
  });

  test("version, and --json with commit and build time", () => {
    expect(run(["version"]).stdout).toMatch(/^switchboard \d+\.\d+\.\d+/);
    const v = JSON.parse(run(["version", "--json"]).stdout);
    expect(v).toMatchObject({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      commit: expect.stringMatching(/^[0-9a-f]{7,}$|^unknown$/),
      platform: "linux-x64",
    });
    expect(Date.parse(v.buildTime)).toBeGreaterThan(Date.parse("2026-01-01"));
  });
});

describe("appliance life cycle", () => {
  test("serve → /healthz → /me with the printed key → backup while running → SIGTERM → exit 0", async () => {
    const server = await serve(init.configPath);
    try {
      const me = await fetch(`${server.url}/api/public/v1/me`, { headers: { authorization: `Bearer ${init.apiKey}` } });
      expect(me.status).toBe(200);
      expect(((await me.json()) as any).data.company.id).toBe(init.companyId);
      expect((await fetch(`${server.url}/api/public/v1/me`)).status).toBe(401);
      const docs = await fetch(`${server.url}/docs`);
      expect(await docs.text()).toContain("/docs/scalar.js");
      expect((await fetch(`${server.url}/docs/scalar.js`)).status).toBe(200);
      expect(await (await fetch(`${server.url}/docs/guide`)).text()).toContain("Webhook signatures");
      expect(((await (await fetch(`${server.url}/api/public/v1/openapi.json`)).json()) as any).components.schemas.Message).toBeDefined();

      const backup = join(dir, "backup.db");
      const b = run(["backup", "--to", backup, "--config", init.configPath]);
      expect(b.code).toBe(0);
      const copy = new Database(backup, { readonly: true });
      expect((copy.query("SELECT count(*) AS n FROM api_keys").get() as { n: number }).n).toBeGreaterThan(0);
      copy.close();
      await Bun.sleep(1200); // at least one checkpoint interval
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
    expect(server.output()).toContain('"msg":"stopped"');
    // The WAL checkpointer worker started and ran (a failure would log and fall back to inline checkpoints).
    expect(server.output()).not.toContain("WAL checkpointer");
    expect(server.output()).toContain('"route":"/api/public/v1/me"');
    expect(server.output()).not.toContain(init.apiKey);
  });

  test("a contact import runs in the binary's import worker thread: rows checked, written, searchable", async () => {
    const server = await serve(init.configPath);
    const api = `${server.url}/api/public/v1`;
    const auth = { authorization: `Bearer ${init.apiKey}` };
    try {
      const rows = Array.from({ length: 2500 }, (_, i) => ({
        firstName: `Bulk${i}`,
        lastName: "Müller",
        identities: [{ channel: "whatsapp", value: `+49 151 2${String(i).padStart(7, "0")}` }],
        tags: ["e2e-import"],
      }));
      const raw = [...rows.map((r) => JSON.stringify(r)), '{"identities":[{"channel":"email","value":"nope"}]}'].join("\n");
      const res = await fetch(`${api}/contacts/import`, { method: "POST", headers: { ...auth, "content-type": "application/x-ndjson" }, body: raw });
      expect(res.status).toBe(202);
      const { id } = ((await res.json()) as { data: { id: string } }).data;
      let imp: any;
      for (let i = 0; i < 200; i++) {
        imp = ((await (await fetch(`${api}/contacts/imports/${id}`, { headers: auth })).json()) as { data: unknown }).data;
        if (imp.status === "completed" || imp.status === "failed") break;
        await Bun.sleep(50);
      }
      expect(imp).toMatchObject({ status: "completed", processed: 2501, created: 2500, failed: 1, errors: [{ row: 2501, pointer: "/identities/0/value" }] });
      const found = (
        (await (await fetch(`${api}/contacts?q=${encodeURIComponent("bulk2499 muller")}`, { headers: auth })).json()) as {
          data: { identities: { value: string }[] }[];
        }
      ).data;
      expect(found.map((c) => c.identities[0]!.value)).toEqual(["+4915120002499"]);
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0);
    }
    expect(server.output()).not.toContain("import worker");
  });

  test("a port in use: one line naming [server] listen and SWITCHBOARD_LISTEN, no stack trace", async () => {
    const server = await serve(init.configPath);
    try {
      const port = new URL(server.url).port;
      const r = run(["serve", "--config", init.configPath], { env: { SWITCHBOARD_LISTEN: `127.0.0.1:${port}` } });
      expect(r.code).toBe(1);
      expect(r.stderr.trim().split("\n")).toEqual([
        `switchboard: cannot listen on 127.0.0.1:${port}: the address is in use (another switchboard, or another program); choose another with [server] listen in the config or SWITCHBOARD_LISTEN=host:port`,
      ]);
    } finally {
      await server.stop();
    }
  });

  test("backup refuses to overwrite without --force; restore is refused while serving, then swaps the file offline", async () => {
    const backup = join(dir, "restore-me.db");
    const cfg = ["--config", init.configPath];
    expect(run(["backup", "--to", backup, ...cfg]).code).toBe(0);
    const again = run(["backup", "--to", backup, ...cfg]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("exists; pass --force");
    expect(run(["backup", "--to", backup, "--force", ...cfg]).code).toBe(0);
    // A change after the backup, which the restore takes back.
    expect(run(["companies", "create", "--slug", "after-backup", "--name", "After", ...cfg]).code).toBe(0);

    const server = await serve(init.configPath);
    try {
      const busy = run(["restore", "--from", backup, ...cfg]);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain("is in use (is switchboard serve running?)");
    } finally {
      await server.stop();
    }
    const bad = join(dir, "not-a-db.db");
    writeFileSync(bad, "hello");
    expect(run(["restore", "--from", bad, ...cfg]).code).toBe(1);
    const ok = run(["restore", "--from", backup, ...cfg]);
    expect(ok.code).toBe(0);
    const aside = /kept at (\S+)/.exec(ok.stdout)![1]!;
    expect(existsSync(aside)).toBe(true);
    const slugs = JSON.parse(run(["companies", "list", "--json", ...cfg]).stdout).map((c: { slug: string }) => c.slug);
    expect(slugs).not.toContain("after-backup");
    const old = new Database(aside, { readonly: true });
    expect(old.query("SELECT slug FROM companies WHERE slug = 'after-backup'").all()).toHaveLength(1);
    old.close();
  });
});
