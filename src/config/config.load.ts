/**
 * Loads the TOML config: parse → resolve `env:NAME` / `file:/path` secrets → apply defaults → validate →
 * apply environment overrides. Any problem is a ConfigError whose message names the key, the value and
 * what was expected; the CLI prints it and exits 1 before anything starts.
 */
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { Value } from "@sinclair/typebox/value";
import { ConfigSchema, type Config } from "./config.schema";

export class ConfigError extends Error {}

export function resolveConfigPath(flag?: string): string {
  return resolve(flag ?? process.env.SWITCHBOARD_CONFIG ?? "./config.toml");
}

export function loadConfig({ path, env = process.env }: { path: string; env?: Record<string, string | undefined> }): Config {
  if (!existsSync(path)) throw new ConfigError(`config file ${path} not found (run "switchboard init" or pass --config PATH)`);
  let raw: unknown;
  try {
    raw = Bun.TOML.parse(readFileSync(path, "utf8"));
  } catch (e) {
    // NB! The error's line/column point into Bun's bundle, not the TOML file, so they are not shown.
    throw new ConfigError(`config ${path}: invalid TOML: ${(e as Error).message.replace(/^TOML Parse error:\s*/, "")}`);
  }
  const config = parseConfig(raw, { env, source: path });
  // Relative paths in the config are relative to the config file, not to the working directory, so the
  // service behaves the same whatever directory systemd starts it in.
  const base = dirname(path);
  if (!isAbsolute(config.storage.data_dir)) config.storage.data_dir = resolve(base, config.storage.data_dir);
  if (!isAbsolute(config.license.file)) config.license.file = resolve(base, config.license.file);
  for (const key of ["tls_cert_file", "tls_key_file"] as const)
    if (config.server[key] && !isAbsolute(config.server[key])) config.server[key] = resolve(base, config.server[key]);
  return config;
}

/** Validates an already parsed config object (also used by tests and `init`). */
export function parseConfig(
  raw: unknown,
  { env = process.env, source = "config" }: { env?: Record<string, string | undefined>; source?: string } = {},
): Config {
  const resolved = resolveSecrets(raw, "", env, source);
  const withDefaults = Value.Default(ConfigSchema, Value.Clone(resolved)) as unknown;
  if (!Value.Check(ConfigSchema, withDefaults)) {
    const first = [...Value.Errors(ConfigSchema, withDefaults)];
    // Union errors are noisy; report the deepest path, which is the one an operator can act on.
    const err = first.sort((a, b) => b.path.length - a.path.length)[0]!;
    const key = pointerToKey(err.path);
    const expected = describeExpected(err.schema as Record<string, unknown>, err.message);
    throw new ConfigError(`${source}: key "${key}" has value ${JSON.stringify(err.value) ?? "(missing)"}: ${expected}`);
  }
  const config = withDefaults as Config;
  applyEnvOverrides(config, env);
  if (config.storage.driver === "postgres" && !config.storage.url)
    throw new ConfigError(`${source}: key "storage.url" is missing: driver = "postgres" needs a URL such as postgres://switchboard@db.internal/switchboard`);
  if (!config.server.tls_cert_file !== !config.server.tls_key_file)
    throw new ConfigError(
      `${source}: key "server.${config.server.tls_cert_file ? "tls_key_file" : "tls_cert_file"}" is missing: HTTPS needs both tls_cert_file and tls_key_file`,
    );
  return config;
}

function applyEnvOverrides(config: Config, env: Record<string, string | undefined>): void {
  if (env.SWITCHBOARD_LISTEN) {
    if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(env.SWITCHBOARD_LISTEN))
      throw new ConfigError(`SWITCHBOARD_LISTEN has value "${env.SWITCHBOARD_LISTEN}": expected host:port`);
    config.server.listen = env.SWITCHBOARD_LISTEN;
  }
  if (env.SWITCHBOARD_DATA_DIR) config.storage.data_dir = resolve(env.SWITCHBOARD_DATA_DIR);
  if (env.SWITCHBOARD_LOG_LEVEL) {
    const levels = ["trace", "debug", "info", "warn", "error", "fatal"];
    if (!levels.includes(env.SWITCHBOARD_LOG_LEVEL))
      throw new ConfigError(`SWITCHBOARD_LOG_LEVEL has value "${env.SWITCHBOARD_LOG_LEVEL}": expected one of ${levels.join(", ")}`);
    config.log.level = env.SWITCHBOARD_LOG_LEVEL as Config["log"]["level"];
  }
}

/** Replaces every string value `env:NAME` / `file:/path` by the secret it names. */
function resolveSecrets(value: unknown, path: string, env: Record<string, string | undefined>, source: string): unknown {
  if (typeof value === "string") {
    if (value.startsWith("env:")) {
      const name = value.slice(4);
      // Own variables only: `env:toString` (or valueOf, constructor…) must not resolve to Object.prototype's function.
      const v = Object.hasOwn(env, name) ? env[name] : undefined;
      if (typeof v !== "string") throw new ConfigError(`${source}: key "${pointerToKey(path)}" refers to environment variable ${name}, which is not set`);
      return v;
    }
    if (value.startsWith("file:")) {
      const file = value.slice(5);
      try {
        return readFileSync(file, "utf8").replace(/\r?\n$/, "");
      } catch {
        throw new ConfigError(`${source}: key "${pointerToKey(path)}" refers to file ${file}, which cannot be read`);
      }
    }
    return value;
  }
  if (Array.isArray(value)) return value.map((v, i) => resolveSecrets(v, `${path}/${i}`, env, source));
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = resolveSecrets(v, `${path}/${k}`, env, source);
    return out;
  }
  return value;
}

/** "/channels/0/settings/token" → "channels[0].settings.token" (how TOML users think of keys). */
export function pointerToKey(pointer: string): string {
  return pointer
    .split("/")
    .filter(Boolean)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join("")
    .replace(/^\./, "");
}

function describeExpected(schema: Record<string, unknown>, fallback: string): string {
  if (Array.isArray(schema.anyOf)) {
    const literals = (schema.anyOf as Record<string, unknown>[]).map((s) => s.const).filter((c) => c !== undefined);
    if (literals.length) return `expected one of ${literals.map((l) => JSON.stringify(l)).join(", ")}`;
  }
  const doc = typeof schema.description === "string" ? ` (${schema.description})` : "";
  return `${fallback.toLowerCase()}${doc}`;
}
