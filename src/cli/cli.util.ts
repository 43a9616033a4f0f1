/** Small CLI helpers: usage errors (exit 1, one line), config + deps loading, JSON/text output. */
import { SchemaTooNewError } from "../db/migrate";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConfigError, loadConfig, resolveConfigPath } from "../config/config.load";
import type { Config } from "../config/config.schema";
import { buildDeps } from "../deps";
import { AppError } from "../platform/errors";
import { silentLogger } from "../platform/logger";

/** Thrown for anything the operator must fix; main prints `switchboard: <message>` and exits 1. */
export class UsageError extends Error {}

export function parse<T extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: T, usage: string) {
  try {
    return parseArgs({ args, options: { ...options, config: { type: "string" } }, allowPositionals: true, strict: true });
  } catch (e) {
    throw new UsageError(`${(e as Error).message.split("\n")[0]} (usage: ${usage})`);
  }
}

export function required(value: string | undefined, flag: string, usage: string): string {
  if (value === undefined || value === "") throw new UsageError(`${flag} is required (usage: ${usage})`);
  return value;
}

export function loadCliConfig(configFlag: string | undefined): Config {
  return loadConfig({ path: resolveConfigPath(configFlag) });
}

/** Deps for one-shot commands: quiet, migrated. */
export async function cliDeps(configFlag: string | undefined) {
  return buildDeps({ config: loadCliConfig(configFlag), log: silentLogger });
}

export function print(json: boolean | undefined, value: unknown, text: string): void {
  process.stdout.write(json ? JSON.stringify(value, null, 2) + "\n" : text + "\n");
}

/** Turns known errors into a one-line message; returns null for unexpected ones. */
export function describeError(e: unknown): string | null {
  if (e instanceof UsageError || e instanceof ConfigError || e instanceof SchemaTooNewError) return e.message;
  if (e instanceof AppError) return e.message;
  return null;
}
