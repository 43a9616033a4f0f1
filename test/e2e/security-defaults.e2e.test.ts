/**
 * The defaults of a fresh install, through the compiled binary (DESIGN §23): `init` writes a loopback listen
 * address and a metrics token, /metrics answers 401 without it; files the appliance creates at run time are
 * not readable by other users even under a permissive umask; HTTPS from `[server] tls_cert_file` /
 * `tls_key_file`, with a renewed certificate picked up on SIGHUP (seen by a client as a new fingerprint);
 * `doctor` warns about plain HTTP on the network and a certificate about to expire.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawn, spawnSync, type Subprocess } from "bun";
import { X509Certificate } from "node:crypto";
import { copyFileSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { connect } from "node:tls";
import { join } from "node:path";
import { BINARY, ensureBinary, freePort, serve, tempDir, until } from "./binary";
import { selfSignedCert } from "../helpers/tls";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The binary under umask 022, the usual default of a login shell: the appliance must not rely on it. */
const runLoose = (args: string[]) => {
  const r = spawnSync(["sh", "-c", 'umask 022; exec "$@"', "sh", ensureBinary(), ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
};
const mode = (path: string) => (statSync(path).mode & 0o777).toString(8).padStart(4, "0");

let dir: string;
let init: { configPath: string; dataDir: string; apiKey: string };
beforeAll(() => {
  dir = tempDir("sb-sec-");
  dirs.push(dir);
  const r = runLoose(["init", "--dir", join(dir, "app"), "--json"]);
  expect(r.code).toBe(0);
  init = JSON.parse(r.stdout);
});

describe("a fresh init", () => {
  test("writes a loopback listen address and a random metrics token", () => {
    const toml = Bun.TOML.parse(readFileSync(init.configPath, "utf8")) as { server: { listen: string }; metrics: { token: string } };
    expect(toml.server.listen).toBe("127.0.0.1:8080");
    expect(toml.metrics.token).toMatch(/^[A-Za-z0-9_-]{43}$/); // 32 random bytes, base64url
    const other = tempDir("sb-sec-");
    dirs.push(other);
    const second = JSON.parse(runLoose(["init", "--dir", other, "--json"]).stdout);
    expect((Bun.TOML.parse(readFileSync(second.configPath, "utf8")) as typeof toml).metrics.token).not.toBe(toml.metrics.token);
  });

  test("/metrics: 401 without the token or with a wrong one, 200 with it", async () => {
    const token = (Bun.TOML.parse(readFileSync(init.configPath, "utf8")) as { metrics: { token: string } }).metrics.token;
    const server = await serve(init.configPath);
    try {
      const scrape = (authorization?: string) => fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} });
      const keyless = await scrape();
      expect(keyless.status).toBe(401);
      const body = await keyless.text();
      expect(body).not.toContain("switchboard_company_balance");
      expect(body).not.toContain("switchboard_channel_account_up");
      expect((await scrape("Bearer wrong")).status).toBe(401);
      expect((await scrape(`Bearer ${init.apiKey}`)).status).toBe(401); // an API key is not the metrics token
      const ok = await scrape(`Bearer ${token}`);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('switchboard_company_balance{company="default",currency="USD"} 100');
      // SIGHUP (systemctl reload) without TLS: logged, nothing else; the process does not die of it.
      server.proc.kill("SIGHUP");
      await until("the SIGHUP log line", () => (server.output().includes("no [server] tls_cert_file to reload") ? true : undefined), {
        timeoutMs: 5000,
        context: server.output,
      });
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  test("files created at run time — database, WAL, media, backups — are 0640 in 0750 directories, under umask 022", async () => {
    // init ran under umask 022 too.
    expect(mode(join(dir, "app"))).toBe("0750");
    expect(mode(init.configPath)).toBe("0600");
    expect(mode(init.dataDir)).toBe("0750");
    const port = await freePort();
    const proc = spawn(["sh", "-c", 'umask 022; exec "$@"', "sh", BINARY, "serve", "--config", init.configPath], {
      env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}` },
      stdout: "ignore",
      stderr: "ignore",
    });
    try {
      const url = `http://127.0.0.1:${port}`;
      await until("the server", async () => ((await fetch(`${url}/healthz`).catch(() => null))?.ok ? true : undefined));
      const form = new FormData();
      form.append("file", new File(["hello"], "note.txt", { type: "text/plain" }));
      const up = await fetch(`${url}/api/public/v1/media`, { method: "POST", headers: { authorization: `Bearer ${init.apiKey}` }, body: form });
      expect(up.status).toBe(201);
      const backup = join(dir, "backup.db");
      expect(runLoose(["backup", "--to", backup, "--config", init.configPath]).code).toBe(0);
      expect(mode(backup)).toBe("0640");
      const media = join(init.dataDir, "media");
      const companyDir = join(media, readdirSync(media)[0]!);
      const created = [
        ["switchboard.db", join(init.dataDir, "switchboard.db")],
        ["switchboard.db-wal", join(init.dataDir, "switchboard.db-wal")],
        ["media/", media],
        ["media/<company>/", companyDir],
        ["media/<company>/<file>", join(companyDir, readdirSync(companyDir)[0]!)],
      ].map(([name, path]) => `${name} ${mode(path!)}`);
      expect(created).toEqual(["switchboard.db 0640", "switchboard.db-wal 0640", "media/ 0750", "media/<company>/ 0750", "media/<company>/<file> 0640"]);
    } finally {
      proc.kill("SIGTERM");
      await proc.exited;
    }
  });
});

/** The SHA-256 fingerprint of the certificate the server presents (not verified: it is self-signed). */
const servedFingerprint = (port: number) =>
  new Promise<string>((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, servername: "localhost", rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on("error", reject);
  });
const fingerprintOf = (pemFile: string) => new X509Certificate(readFileSync(pemFile)).fingerprint256;

describe("HTTPS with [server] tls_cert_file and tls_key_file", () => {
  let tlsDir: string;
  let configPath: string;
  let proc: Subprocess<"ignore", "pipe", "pipe"> | undefined;
  let out = "";
  let port: number;
  beforeAll(() => {
    tlsDir = tempDir("sb-tls-");
    dirs.push(tlsDir);
    const first = selfSignedCert(tlsDir, "first");
    copyFileSync(first.cert, join(tlsDir, "live.crt"));
    copyFileSync(first.key, join(tlsDir, "live.key"));
    configPath = join(tlsDir, "config.toml");
    // Relative paths: relative to the config file.
    writeFileSync(
      configPath,
      readFileSync(init.configPath, "utf8")
        .replace(/^public_url = .*$/m, (line) => `${line}\ntls_cert_file = "live.crt"\ntls_key_file = "live.key"`)
        .replace(/^data_dir = .*$/m, `data_dir = "${init.dataDir}"`),
    );
  });
  afterAll(async () => {
    proc?.kill("SIGTERM");
    await proc?.exited;
  });

  test("serves HTTPS with the certificate; SIGHUP swaps in a renewed one without a restart; a broken renewal keeps the old one", async () => {
    port = await freePort();
    proc = spawn([BINARY, "serve", "--config", configPath], {
      env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}` },
      stdout: "pipe",
      stderr: "pipe",
    });
    void (async () => {
      for await (const chunk of proc!.stdout) out += new TextDecoder().decode(chunk);
    })();
    const https = `https://127.0.0.1:${port}`;
    const insecure = { tls: { rejectUnauthorized: false } } as RequestInit;
    await until("HTTPS /healthz", async () => ((await fetch(`${https}/healthz`, insecure).catch(() => null))?.ok ? true : undefined), { context: () => out });
    expect(await servedFingerprint(port)).toBe(fingerprintOf(join(tlsDir, "first.crt")));
    // Plain HTTP on the same port is not served.
    expect(
      await fetch(`http://127.0.0.1:${port}/healthz`)
        .then((r) => r.status)
        .catch(() => "refused"),
    ).not.toBe(200);

    // A renewed certificate, written where the config points, then SIGHUP (systemctl reload).
    const second = selfSignedCert(tlsDir, "second");
    copyFileSync(second.cert, join(tlsDir, "live.crt"));
    copyFileSync(second.key, join(tlsDir, "live.key"));
    const pid = proc.pid;
    proc.kill("SIGHUP");
    const want = fingerprintOf(second.cert);
    await until("the renewed certificate", async () => ((await servedFingerprint(port).catch(() => "")) === want ? true : undefined), {
      timeoutMs: 10_000,
      context: () => out,
    });
    expect(proc.pid).toBe(pid);
    expect(proc.exitCode).toBeNull(); // the same process: no restart
    expect((await fetch(`${https}/healthz`, insecure)).status).toBe(200);
    expect(out).toContain("SIGHUP: certificate reloaded");

    // A renewal gone wrong (the key of another certificate): logged, and the working certificate stays.
    copyFileSync(selfSignedCert(tlsDir, "third").key, join(tlsDir, "live.key"));
    proc.kill("SIGHUP");
    await until("the refusal in the log", () => (out.includes("certificate not reloaded") ? true : undefined), { timeoutMs: 10_000, context: () => out });
    expect(out).toContain("is not the private key of the certificate");
    expect(await servedFingerprint(port)).toBe(want);
    expect((await fetch(`${https}/healthz`, insecure)).status).toBe(200);
  });

  test("a certificate that does not match its key stops start-up with one line naming the key", () => {
    const bad = join(tlsDir, "bad.toml");
    writeFileSync(bad, readFileSync(configPath, "utf8")); // live.key is the third certificate's key now
    const r = spawnSync([BINARY, "serve", "--config", bad], { env: { ...process.env, SWITCHBOARD_LISTEN: "127.0.0.1:1" }, stdout: "pipe", stderr: "pipe" });
    expect(r.exitCode).toBe(1);
    expect(r.stderr.toString().trim()).toMatch(/^switchboard: key "server\.tls_key_file": .* is not the private key of the certificate in .*live\.crt$/);
  });
});

describe("doctor", () => {
  const doctor = (config: string, env: Record<string, string> = {}) => {
    const r = spawnSync([BINARY, "doctor", "--json", "--config", config], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, checks: (JSON.parse(r.stdout.toString()) as { checks: { name: string; status: string; detail: string }[] }).checks };
  };
  const check = (checks: { name: string; status: string; detail: string }[], name: string) => checks.find((c) => c.name === name);

  test("a fresh init: loopback, metrics token, modes all ok", () => {
    const { checks } = doctor(init.configPath);
    expect(check(checks, "tls")).toMatchObject({ status: "ok", detail: "plain HTTP on 127.0.0.1:8080 (loopback only)" });
    expect(check(checks, "metrics")?.status).toBe("ok");
    expect(check(checks, "permissions")?.status).toBe("ok");
  });

  test("warns: plain HTTP on a network address, no metrics token, a world-readable config, a certificate expiring within 14 days", () => {
    const at = tempDir("sb-doc-");
    dirs.push(at);
    const loose = join(at, "loose.toml");
    writeFileSync(
      loose,
      readFileSync(init.configPath, "utf8")
        .replace(/^token = .*$/m, 'token = ""')
        .replace(/^data_dir = .*$/m, `data_dir = "${init.dataDir}"`),
      { mode: 0o644 },
    );
    const plain = doctor(loose, { SWITCHBOARD_LISTEN: "0.0.0.0:8080" });
    expect(plain.code).toBe(1);
    expect(check(plain.checks, "tls")).toMatchObject({
      status: "warn",
      detail: expect.stringContaining("plain HTTP on 0.0.0.0:8080, reachable from the network"),
    });
    expect(check(plain.checks, "metrics")).toMatchObject({ status: "warn", detail: expect.stringContaining("/metrics answers 401 to everyone") });
    expect(check(plain.checks, "permissions")).toMatchObject({ status: "warn", detail: expect.stringContaining(`${loose} (0644)`) });

    const soon = selfSignedCert(at, "soon", 10);
    const later = selfSignedCert(at, "later", 90);
    const withCert = (c: { cert: string; key: string }) => {
      const path = join(at, "tls.toml");
      writeFileSync(
        path,
        readFileSync(init.configPath, "utf8")
          .replace(/^public_url = .*$/m, (l) => `${l}\ntls_cert_file = "${c.cert}"\ntls_key_file = "${c.key}"`)
          .replace(/^data_dir = .*$/m, `data_dir = "${init.dataDir}"`),
        { mode: 0o600 },
      );
      return doctor(path, { SWITCHBOARD_LISTEN: "0.0.0.0:8443" });
    };
    expect(check(withCert(soon).checks, "tls")).toMatchObject({ status: "warn", detail: expect.stringContaining("expires within 14 days") });
    expect(check(withCert(later).checks, "tls")).toMatchObject({
      status: "ok",
      detail: expect.stringMatching(/^HTTPS on 0\.0\.0\.0:8443: CN=localhost, valid until /),
    });
    expect(check(withCert({ cert: soon.cert, key: later.key }).checks, "tls")).toMatchObject({
      status: "fail",
      detail: expect.stringContaining("serve will not start"),
    });
  });
});
