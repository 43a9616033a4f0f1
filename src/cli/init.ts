/**
 * `switchboard init [--dir DIR] [--json]`: a working sandbox appliance in one step — config with sandbox
 * accounts for every channel and social platform, the database, company "default" with 100.000000 of
 * sandbox balance, and an admin key printed once.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadConfig } from "../config/config.load";
import { buildDeps } from "../deps";
import { createApiKey } from "../modules/api-keys/api-keys.service";
import { createCompany } from "../modules/companies/companies.service";
import { newId } from "../platform/ids";
import { silentLogger } from "../platform/logger";
import { parseMicros } from "../platform/money";
import { parse, print, UsageError } from "./cli.util";

const USAGE = "switchboard init [--dir DIR] [--json]";

const CHANNEL_NAMES: [string, string][] = [
  ["whatsapp", "WhatsApp"],
  ["instagram", "Instagram"],
  ["messenger", "Messenger"],
  ["x", "X"],
  ["tiktok", "TikTok"],
  ["telegram", "Telegram"],
  ["email", "E-mail"],
];
const SOCIAL: [string, string][] = [
  ["instagram", "Instagram"],
  ["facebook", "Facebook"],
  ["x", "X"],
  ["tiktok", "TikTok"],
];

/** Fictional handles for the sandbox accounts' click-to-chat links (sources), so links and QR codes can be tried. */
const SANDBOX_CHAT_HANDLES: Record<string, string> = {
  whatsapp: "15550100000",
  messenger: "SwitchboardSandbox",
  instagram: "switchboard.sandbox",
  telegram: "SwitchboardSandboxBot",
};

export function sandboxConfigToml(): string {
  const channels = CHANNEL_NAMES.map(
    ([channel, name]) => `[[channels]]
id = "${newId()}"
${SANDBOX_CHAT_HANDLES[channel] ? `chat_handle = "${SANDBOX_CHAT_HANDLES[channel]}"          # click-to-chat links of sources (fictional here)\n` : ""}company = "default"
channel = "${channel}"
provider = "sandbox"
name = "${name} (sandbox)"
default = true
`,
  ).join("\n");
  const social = SOCIAL.map(
    ([platform, name]) => `[[social_accounts]]
id = "${newId()}"
company = "default"
platform = "${platform}"
provider = "sandbox"
name = "${name} (sandbox)"
`,
  ).join("\n");
  return `# Switchboard configuration, written by "switchboard init".
# Every key is documented in config.example.toml; unspecified keys take their defaults.

[server]
# Loopback only: open it to the network ("0.0.0.0:8080") behind TLS — tls_cert_file/tls_key_file, or a proxy
# (docs/operations.md).
listen = "127.0.0.1:8080"
public_url = "http://localhost:8080"

[metrics]
# GET /metrics needs Authorization: Bearer <token> (Prometheus: authorization.credentials).
token = "${randomBytes(32).toString("base64url")}"

[storage]
data_dir = "./data"

[billing]
currency = "USD"

# Sandbox accounts: every send succeeds and moves to sent/delivered/read; +12025550101/2/3 and recipients starting with
# "blocked", "fail" or "slow" simulate failures. Replace them with real providers when ready.
${channels}
# Social sandbox accounts publish at once (text with #fail is refused, #flaky fails its first attempt) and
# give synthetic analytics. Real providers (instagram, facebook, x, tiktok): see config.example.toml.
${social}`;
}

export async function initCommand(args: string[]): Promise<void> {
  const { values } = parse(args, { dir: { type: "string" }, json: { type: "boolean" } }, USAGE);
  const dir = resolve(values.dir ?? ".");
  const configPath = join(dir, "config.toml");
  if (existsSync(configPath)) throw new UsageError(`${configPath} already exists; remove it or choose another --dir`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(configPath, sandboxConfigToml(), { mode: 0o600 });

  const config = loadConfig({ path: configPath });
  const deps = await buildDeps({ config, log: silentLogger });
  try {
    const { company, key } = await deps.db.unit(async () => {
      const { company } = await createCompany({ db: deps.db, now: deps.now, slug: "default", name: "Default company" });
      await deps.ledger.credit({ companyId: company.id, amount: parseMicros("100.000000")!, description: "sandbox starting balance" });
      const { key } = await createApiKey({ db: deps.db, now: deps.now, companyId: company.id, name: "admin", scopes: ["*"] });
      return { company, key };
    });
    print(
      values.json,
      { configPath, dataDir: config.storage.data_dir, companyId: company.id, apiKey: key },
      [
        `Wrote ${configPath}`,
        `Database in ${config.storage.data_dir}`,
        `Company "default" (${company.id}) with a sandbox balance of 100.000000 ${config.billing.currency}`,
        "",
        `Admin API key (shown once, store it now):`,
        `  ${key}`,
        "",
        `Start with: switchboard serve --config ${configPath}`,
      ].join("\n"),
    );
  } finally {
    deps.db.close();
  }
}
