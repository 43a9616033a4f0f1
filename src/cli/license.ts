/**
 * `switchboard license show [--json] [--config PATH]`: the license file the config names, verified with the
 * public key built into this binary. `switchboard license verify FILE [--json]`: the same for any file,
 * before installing it (no config needed).
 * Both print the license (company, modules, expiry) and exit 0 only when it is valid now; an expired,
 * missing, forged or unreadable license prints its status, one line on stderr, and exits 1.
 */
import { resolve } from "node:path";
import { createLicenseChecker } from "../platform/license/license";
import { LICENSE_PUBLIC_KEY } from "../platform/license/license.key";
import { loadCliConfig, parse, UsageError } from "./cli.util";

export interface LicenseReport {
  file: string;
  status: "valid" | "expired" | "invalid";
  reason: string | null;
  company: string | null;
  modules: string[];
  expiresAt: string | null;
  issuedAt: string | null;
}

export function inspectLicense(file: string, now: Date = new Date()): LicenseReport {
  const loaded = createLicenseChecker({ path: file, publicKey: LICENSE_PUBLIC_KEY, now: () => now }).read();
  if (!loaded.ok) return { file, status: "invalid", reason: loaded.reason, company: null, modules: [], expiresAt: null, issuedAt: null };
  const p = loaded.payload;
  const expired = Date.parse(p.expiresAt) <= now.getTime();
  return {
    file,
    status: expired ? "expired" : "valid",
    reason: expired ? `the license expired at ${p.expiresAt}` : null,
    company: p.company,
    modules: p.modules,
    expiresAt: new Date(p.expiresAt).toISOString(),
    issuedAt: p.issuedAt ?? null,
  };
}

function report(r: LicenseReport, json: boolean | undefined): void {
  if (json) process.stdout.write(JSON.stringify(r, null, 2) + "\n");
  else {
    const lines = [`file:     ${r.file}`, `status:   ${r.status}`];
    if (r.company !== null) lines.push(`company:  ${r.company}`, `modules:  ${r.modules.join(", ") || "(none)"}`, `expires:  ${r.expiresAt}`);
    if (r.issuedAt) lines.push(`issued:   ${r.issuedAt}`);
    process.stdout.write(lines.join("\n") + "\n");
  }
  if (r.status !== "valid") throw new UsageError(`license ${r.file} is ${r.status}: ${r.reason}`);
}

export function licenseCommand(args: string[]): void {
  const [sub, ...rest] = args;
  if (sub === "show") {
    const { values } = parse(rest, { json: { type: "boolean" } }, "switchboard license show [--json] [--config PATH]");
    report(inspectLicense(loadCliConfig(values.config).license.file), values.json);
  } else if (sub === "verify") {
    const usage = "switchboard license verify FILE [--json]";
    const { values, positionals } = parse(rest, { json: { type: "boolean" } }, usage);
    if (positionals.length !== 1) throw new UsageError(`FILE is required (usage: ${usage})`);
    report(inspectLicense(resolve(positionals[0]!)), values.json);
  } else throw new UsageError("usage: switchboard license show|verify");
}
