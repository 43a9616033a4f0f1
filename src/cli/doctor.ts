/**
 * `switchboard doctor [--json]`: checks a deployment without changing it — the config, the database
 * (integrity, size, schema), disk space, the job queue, the license, every channel and social account's
 * provider host, and the clock against the providers' clocks. Exit 0: all ok; 1: warnings; 2: failures.
 * Credentials are not spent on test calls: an account whose credentials were refused shows `auth_failed` in
 * GET /channels and `switchboard_channel_account_up` once it has been used.
 */
import { Database } from "bun:sqlite";
import { databasePath } from "../config/config.schema";
import { existsSync, statfsSync, statSync } from "node:fs";
import { validateChannelAccounts } from "../channels/channel.accounts";
import { schemaState } from "../db/migrate";
import { openStorage } from "../deps";
import { validateSocialAccounts } from "../modules/social/social.accounts";
import { VERSION } from "../version";
import { resolveConfigPath } from "../config/config.load";
import type { Config } from "../config/config.schema";
import { daysLeft, readTlsFiles } from "../platform/http/tls";
import { inspectLicense } from "./license";
import { loadCliConfig, parse } from "./cli.util";
import { splitListen } from "./serve.listener";

type Status = "ok" | "warn" | "fail";
interface Check {
  name: string;
  status: Status;
  detail: string;
}

const MB = 1024 * 1024;
const mb = (n: number) => `${(n / MB).toFixed(1)} MB`;

/** Any HTTP answer means reachable; its Date header tells the provider's clock. */
async function probe(url: string): Promise<{ ok: boolean; detail: string; skewMs: number | null }> {
  const t0 = Date.now();
  try {
    const res = await fetch(url, { method: "GET", headers: { "user-agent": `Switchboard/${VERSION}` }, signal: AbortSignal.timeout(5000), redirect: "manual" });
    await res.body?.cancel();
    const date = Date.parse(res.headers.get("date") ?? "");
    const skewMs = Number.isNaN(date) ? null : Math.round((t0 + Date.now()) / 2 - date);
    return { ok: true, detail: `reachable (HTTP ${res.status} in ${Date.now() - t0} ms)`, skewMs };
  } catch (e) {
    return { ok: false, detail: `unreachable: ${(e as Error).message}`, skewMs: null };
  }
}

async function tcp(host: string, port: number): Promise<{ ok: boolean; detail: string }> {
  try {
    const socket = await Promise.race([
      Bun.connect({ hostname: host, port, socket: { data() {} } }),
      Bun.sleep(5000).then(() => {
        throw new Error("timed out after 5 s");
      }),
    ]);
    socket.end();
    return { ok: true, detail: `reachable (${host}:${port})` };
  } catch (e) {
    return { ok: false, detail: `unreachable ${host}:${port}: ${(e as Error).message}` };
  }
}

export async function runDoctor(configFlag: string | undefined): Promise<Check[]> {
  const checks: Check[] = [];
  const add = (name: string, status: Status, detail: string) => checks.push({ name, status, detail });
  const config = loadCliConfig(configFlag); // a bad config stops here with its one-line error
  const accounts = validateChannelAccounts(config);
  const social = validateSocialAccounts(config);
  add("config", "ok", `${accounts.length} channel account(s), ${social.length} social account(s); version ${VERSION}`);
  exposureChecks(config, resolveConfigPath(configFlag), add);

  const file = databasePath(config);
  if (config.storage.driver === "postgres") {
    try {
      const db = openStorage(config);
      const version = ((await db.sql("SHOW server_version").get()) as { server_version: string }).server_version;
      db.close();
      add("database", "ok", `PostgreSQL ${version} answers at [storage] url`);
    } catch (e) {
      add("database", "fail", (e as Error).message);
    }
  } else if (!existsSync(file)) add("database", "warn", `no database at ${file} yet (created at the first start)`);
  else {
    const db = new Database(file, { readonly: true });
    try {
      db.exec("PRAGMA busy_timeout = 5000");
      const check = (db.query("PRAGMA quick_check").get() as { quick_check: string }).quick_check;
      const wal = existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0;
      add(
        "database",
        check === "ok" ? "ok" : "fail",
        `${check === "ok" ? "quick_check ok" : `quick_check: ${check}`}; ${mb(statSync(file).size)}, WAL ${mb(wal)}`,
      );
      const { pending, newer } = schemaState(db);
      if (newer) add("schema", "fail", `written by a newer Switchboard than this binary (${VERSION}); it will not start on it`);
      else
        add(
          "schema",
          pending ? "warn" : "ok",
          pending ? `${pending} migration(s) pending: they run at the next start, after an automatic backup` : "up to date",
        );
      try {
        const t = Date.now();
        const jobs = db
          .query(
            `SELECT sum(status = 'dead') AS dead, sum(status = 'pending') AS pending, min(CASE WHEN status = 'pending' AND run_at <= ? THEN run_at END) AS oldest FROM jobs`,
          )
          .get(t) as { dead: number | null; pending: number | null; oldest: number | null };
        const age = jobs.oldest === null ? 0 : (t - jobs.oldest) / 1000;
        const status: Status = (jobs.dead ?? 0) > 0 || age > 300 ? "warn" : "ok";
        add(
          "jobs",
          status,
          `${jobs.pending ?? 0} pending (oldest due ${Math.round(age)} s ago${age > 300 ? ": is the service running?" : ""}), ${jobs.dead ?? 0} dead${jobs.dead ? " (switchboard jobs list --dead)" : ""}`,
        );
      } catch {
        add("jobs", "warn", "no job table yet");
      }
    } catch (e) {
      add("database", "fail", `cannot read ${file}: ${(e as Error).message}`);
    } finally {
      db.close();
    }
  }

  try {
    const fs = statfsSync(config.storage.data_dir);
    const free = fs.bavail * fs.bsize;
    const share = fs.bavail / fs.blocks;
    add(
      "disk",
      free < 100 * MB ? "fail" : free < 1024 * MB || share < 0.05 ? "warn" : "ok",
      `${mb(free)} free (${(share * 100).toFixed(0)} %) on ${config.storage.data_dir}`,
    );
  } catch (e) {
    add("disk", "warn", `cannot read free space of ${config.storage.data_dir}: ${(e as Error).message}`);
  }

  const lic = existsSync(config.license.file) ? inspectLicense(config.license.file) : null;
  if (!lic) add("license", "ok", `none at ${config.license.file} (pipeline and source tracking answer 403 LICENSE_NOT_FOUND)`);
  else {
    const soon = lic.expiresAt && Date.parse(lic.expiresAt) - Date.now() < 14 * 86_400_000;
    add(
      "license",
      lic.status !== "valid" ? "warn" : soon ? "warn" : "ok",
      lic.status === "valid"
        ? `${lic.company}: ${lic.modules.join(", ")} until ${lic.expiresAt}${soon ? " (expires within 14 days)" : ""}`
        : `${lic.status}: ${lic.reason}`,
    );
  }

  const skews: number[] = [];
  const probeAccount = async (kind: string, name: string, provider: string, settings: Record<string, unknown>) => {
    const label = `${kind} ${name}${name.toLowerCase().includes(provider) ? "" : ` (${provider})`}`;
    if (provider === "sandbox") return add(label, "ok", "sandbox: nothing to reach");
    if (typeof settings.base_url === "string" && settings.base_url) {
      const r = await probe(settings.base_url);
      if (r.skewMs !== null) skews.push(r.skewMs);
      return add(label, r.ok ? "ok" : "fail", r.detail);
    }
    if (typeof settings.host === "string" && typeof settings.port === "number") {
      const r = await tcp(settings.host, settings.port);
      return add(label, r.ok ? "ok" : "fail", r.detail);
    }
    add(label, "ok", "no provider host to check");
  };
  await Promise.all([
    ...accounts.map((a) => probeAccount("channel", a.name, a.provider, a.settings)),
    ...social.map((s) => probeAccount("social", s.name || s.id, s.provider, s.settings as Record<string, unknown>)),
  ]);

  if (!skews.length) add("clock", "ok", "not compared (no provider answered with a Date header)");
  else {
    const worst = skews.reduce((a, b) => (Math.abs(b) > Math.abs(a) ? b : a));
    // Signed webhooks (Standard Webhooks, Meta, X) are refused beyond a few minutes of skew.
    add(
      "clock",
      Math.abs(worst) > 30_000 ? "warn" : "ok",
      `${(worst / 1000).toFixed(1)} s against the providers' clocks${Math.abs(worst) > 30_000 ? ": fix NTP (signatures are time-checked)" : ""}`,
    );
  }
  return checks;
}

const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\./.test(host);

/** How the appliance faces the network (DESIGN §23): listen address and TLS, the metrics token, file modes. */
function exposureChecks(config: Config, configPath: string, add: (name: string, status: Status, detail: string) => void): void {
  const [host] = splitListen(config.server.listen);
  if (config.server.tls_cert_file) {
    try {
      const { certificate } = readTlsFiles({ certFile: config.server.tls_cert_file, keyFile: config.server.tls_key_file });
      const days = daysLeft(certificate, new Date());
      const status: Status = days <= 0 ? "fail" : days < 14 ? "warn" : "ok";
      add(
        "tls",
        status,
        `HTTPS on ${config.server.listen}: ${certificate.subject.replace(/\n/g, ", ")}, ${days <= 0 ? "EXPIRED" : "valid"} until ${certificate.validTo}${status === "warn" ? ` (expires within 14 days: renew it, then systemctl reload switchboard)` : ""}`,
      );
    } catch (e) {
      add("tls", "fail", `${(e as Error).message}: serve will not start`);
    }
  } else if (isLoopback(host)) add("tls", "ok", `plain HTTP on ${config.server.listen} (loopback only)`);
  else
    add(
      "tls",
      "warn",
      `plain HTTP on ${config.server.listen}, reachable from the network: API keys travel in clear. Set [server] tls_cert_file and tls_key_file, or listen on 127.0.0.1 behind a TLS proxy`,
    );

  if (config.metrics.token) add("metrics", "ok", "/metrics needs the [metrics] token");
  else add("metrics", "warn", "no [metrics] token: /metrics answers 401 to everyone (set one, e.g. openssl rand -base64 32, and give it to Prometheus)");

  // The config holds provider credentials; the data directory the database (secrets, contacts' personal data).
  const open: string[] = [];
  const paths = [configPath, config.storage.data_dir, ...(config.storage.driver === "sqlite" ? [databasePath(config)] : [])];
  for (const path of paths) {
    try {
      const mode = statSync(path).mode & 0o777;
      if (mode & 0o007) open.push(`${path} (${mode.toString(8).padStart(4, "0")})`);
    } catch {} // absent: reported by the database check
  }
  add(
    "permissions",
    open.length ? "warn" : "ok",
    open.length ? `readable by every user: ${open.join(", ")}; chmod o-rwx them (0640 files, 0750 directories)` : "config and data not readable by other users",
  );
}

export async function doctorCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { json: { type: "boolean" } }, "switchboard doctor [--json] [--config PATH]");
  const checks = await runDoctor(values.config);
  const worst: Status = checks.some((c) => c.status === "fail") ? "fail" : checks.some((c) => c.status === "warn") ? "warn" : "ok";
  if (values.json) process.stdout.write(JSON.stringify({ status: worst, checks }, null, 2) + "\n");
  else {
    const mark = { ok: "ok  ", warn: "WARN", fail: "FAIL" };
    process.stdout.write(
      checks.map((c) => `${mark[c.status]}  ${c.name.padEnd(34)} ${c.detail}`).join("\n") +
        `\n${worst === "ok" ? "All checks passed." : worst === "warn" ? "Warnings above." : "Failures above."}\n`,
    );
  }
  process.exit(worst === "ok" ? 0 : worst === "warn" ? 1 : 2);
}
