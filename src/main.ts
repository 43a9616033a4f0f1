#!/usr/bin/env bun
/** CLI entry: parse the command, dispatch to cli/*; nothing else. */
process.env.NODE_ENV ||= "production"; // bun --compile bakes "development" otherwise (STACK-NOTES)
// Files the appliance creates (the database and its WAL, media, backups, init's data directory) hold secrets
// and personal data: never readable by other users (0640 files, 0750 directories), whatever umask started it.
// Only ever tightened: a stricter umask (077) stays.
process.umask(process.umask(0o027) | 0o027);

import { backupCommand, balanceCommand, companiesCommand, jobsCommand, keysCommand, migrateCommand, restoreCommand } from "./cli/admin";
import { describeError } from "./cli/cli.util";
import { doctorCommand } from "./cli/doctor";
import { initCommand } from "./cli/init";
import { licenseCommand } from "./cli/license";
import { migrateToPostgresCommand } from "./cli/migrate-to-postgres";
import { serveCommand } from "./cli/serve";
import { templatesCommand } from "./cli/templates";
import { BUILD_TIME, COMMIT, VERSION } from "./version";

const HELP = `switchboard ${VERSION} — on-premises omnichannel messaging appliance

  switchboard init    [--dir DIR] [--json]
  switchboard serve   [--config PATH]
  switchboard migrate [--config PATH]
  switchboard companies create --slug S --name N [--balance 10.000000] [--json]
  switchboard companies list [--json]
  switchboard keys create --company SLUG [--name N] [--scopes a,b|*] [--allow-ip CIDR,...] [--expires-at ISO] [--rate-limit RPS] [--json]
  switchboard keys list [--company SLUG] [--json]
  switchboard keys revoke ID
  switchboard balance credit --company SLUG --amount 25.000000 [--json]
  switchboard jobs list [--dead] [--json]
  switchboard jobs retry ID
  switchboard templates sync [--json]
  switchboard backup --to FILE [--force]
  switchboard license show [--json]
  switchboard license verify FILE [--json]
  switchboard restore --from FILE
  switchboard migrate-to-postgres [--to URL|env:NAME|file:PATH] [--config PATH] [--json]
  switchboard doctor [--json]
  switchboard version [--json]

Config: --config PATH, else $SWITCHBOARD_CONFIG, else ./config.toml.
Overrides: SWITCHBOARD_LISTEN, SWITCHBOARD_DATA_DIR, SWITCHBOARD_LOG_LEVEL.`;

const commands: Record<string, (args: string[]) => unknown> = {
  init: initCommand,
  serve: serveCommand,
  migrate: migrateCommand,
  companies: companiesCommand,
  keys: keysCommand,
  balance: balanceCommand,
  jobs: jobsCommand,
  templates: templatesCommand,
  backup: backupCommand,
  restore: restoreCommand,
  "migrate-to-postgres": migrateToPostgresCommand,
  doctor: doctorCommand,
  license: licenseCommand,
  version: (args: string[]) =>
    process.stdout.write(
      args.includes("--json")
        ? JSON.stringify({ version: VERSION, commit: COMMIT, buildTime: BUILD_TIME, bun: Bun.version, platform: `${process.platform}-${process.arch}` }) + "\n"
        : `switchboard ${VERSION} (${COMMIT})\n`,
    ),
  help: () => process.stdout.write(HELP + "\n"),
};

/**
 * `switchboard <command> [<sub>] --help` (or `-h`, or `switchboard help <command>`): that command's lines of
 * HELP, exit 0. NB! Answered here, before the command runs: `init --help` must not write a config.
 */
function usageOf(name: string, sub: string | undefined): string {
  const lines = HELP.split("\n").filter((l) => l.startsWith(`  switchboard ${name} `) || l === `  switchboard ${name}`);
  const ofSub = sub ? lines.filter((l) => l.startsWith(`  switchboard ${name} ${sub}`)) : [];
  return `usage:\n${(ofSub.length ? ofSub : lines).join("\n")}\n\n${HELP.slice(HELP.indexOf("Config:"))}\n`;
}

const [name, ...args] = process.argv.slice(2);
const asksHelp = args.includes("--help") || args.includes("-h");
if (name && name in commands && name !== "help" && asksHelp) {
  process.stdout.write(usageOf(name, args[0]?.startsWith("-") ? undefined : args[0]));
  process.exit(0);
}
if (name === "help" && args[0] && args[0] in commands) {
  process.stdout.write(usageOf(args[0], args[1]));
  process.exit(0);
}
const command = name === "--help" || name === "-h" ? commands.help : name === "--version" ? commands.version : commands[name ?? ""];
if (!command) {
  process.stderr.write(name ? `switchboard: unknown command "${name}"; run "switchboard help"\n` : HELP + "\n");
  process.exit(1);
}
try {
  await command(args);
} catch (e) {
  const message = describeError(e);
  if (message === null) {
    process.stderr.write(`switchboard: unexpected error: ${(e as Error)?.stack ?? e}\n`);
    process.exit(2);
  }
  process.stderr.write(`switchboard: ${message}\n`);
  process.exit(1);
}
