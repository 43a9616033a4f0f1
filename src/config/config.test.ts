import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Kind, type TSchema } from "@sinclair/typebox";
import { ConfigError, loadConfig, parseConfig, pointerToKey } from "./config.load";
import { ConfigSchema } from "./config.schema";

const example = readFileSync(join(import.meta.dir, "../../config.example.toml"), "utf8");

/** Every leaf key of an object schema, as "section.key". */
function schemaKeys(schema: TSchema, prefix = ""): string[] {
  if (schema[Kind] !== "Object") return [prefix];
  return Object.entries(schema.properties as Record<string, TSchema>).flatMap(([k, s]) =>
    s[Kind] === "Object" ? schemaKeys(s, `${prefix}${k}.`) : [`${prefix}${k}`],
  );
}

describe("config", () => {
  test("config.example.toml parses and validates", () => {
    const config = parseConfig(Bun.TOML.parse(example), { env: { TELEGRAM_BOT_TOKEN: "t", TELEGRAM_SECRET_TOKEN: "s" } });
    expect(config.server.listen).toBe("127.0.0.1:8080");
    expect(config.channels).toHaveLength(2);
  });

  test("config.example.toml documents every key of the schema", () => {
    const missing = schemaKeys(ConfigSchema).filter((key) => {
      const [section, ...rest] = key.split(".");
      const leaf = rest[rest.length - 1] ?? section!;
      return (
        !new RegExp(`^\\s*(\\[+${section}[\\].]|${leaf}\\s*=)`, "m").test(example) || !new RegExp(`^\\s*${leaf}\\s*=|\\[\\[?${leaf}\\]`, "m").test(example)
      );
    });
    expect(missing).toEqual([]);
  });

  test("every key has a default: an empty config is valid", () => {
    const config = parseConfig({}, { env: {} });
    expect(config.rate_limit).toEqual({ requests_per_second: 100, burst: 200 });
    expect(config.billing.prices.wa_template_text).toBe("0.050000");
    expect(config.channels).toEqual([]);
  });

  test.each([
    [{ server: { listen: "nowhere" } }, 'key "server.listen" has value "nowhere"'],
    [{ rate_limit: { burst: 0 } }, 'key "rate_limit.burst" has value 0'],
    [{ log: { level: "loud" } }, 'key "log.level" has value "loud": expected one of "trace", "debug"'],
    [{ channels: [{ id: "x", channel: "whatsapp", name: "w" }] }, 'key "channels[0].id" has value "x"'],
    [
      { channels: [{ id: "0193a4b2-0000-7000-8000-000000000001", channel: "fax", name: "w" }] },
      'key "channels[0].channel" has value "fax": expected one of "whatsapp"',
    ],
    [{ server: { nope: 1 } }, 'key "server.nope"'],
  ])("invalid %p → ConfigError naming key and value", (raw, message) => {
    expect(() => parseConfig(raw, { env: {} })).toThrow(ConfigError);
    expect(() => parseConfig(raw, { env: {} })).toThrow(message as string);
  });

  test("env: and file: secrets are resolved before validation; env overrides apply", () => {
    const path = join(import.meta.dir, "../../package.json");
    const c = parseConfig(
      {
        server: { public_url: "env:SB_URL" },
        channels: [{ id: "0193a4b2-0000-7000-8000-000000000001", channel: "telegram", name: "t", settings: { bot_token: `file:${path}` } }],
      },
      { env: { SB_URL: "https://sb.example", SWITCHBOARD_LISTEN: "127.0.0.1:9000", SWITCHBOARD_LOG_LEVEL: "debug" } },
    );
    expect(c.server.public_url).toBe("https://sb.example");
    expect(c.channels[0]!.settings.bot_token).toContain('"name": "switchboard"');
    expect(c.server.listen).toBe("127.0.0.1:9000");
    expect(c.log.level).toBe("debug");
    expect(() => parseConfig({}, { env: { SWITCHBOARD_LOG_LEVEL: "loud" } })).toThrow("SWITCHBOARD_LOG_LEVEL");
  });

  test("safe defaults: loopback listen, plain HTTP, no metrics token (/metrics then answers 401)", () => {
    const config = parseConfig({}, { env: {} });
    expect(config.server).toMatchObject({ listen: "127.0.0.1:8080", tls_cert_file: "", tls_key_file: "" });
    expect(config.metrics.token).toBe("");
    expect(parseConfig({}, { env: { SWITCHBOARD_LISTEN: "0.0.0.0:9000" } }).server.listen).toBe("0.0.0.0:9000");
  });

  test("TLS needs both files; relative paths are relative to the config file", () => {
    expect(() => parseConfig({ server: { tls_cert_file: "/etc/cert.pem" } }, { env: {} })).toThrow('key "server.tls_key_file" is missing');
    expect(() => parseConfig({ server: { tls_key_file: "/etc/key.pem" } }, { env: {} })).toThrow('key "server.tls_cert_file" is missing');
    const dir = mkdtempSync(join(tmpdir(), "sb-config-"));
    try {
      writeFileSync(join(dir, "config.toml"), '[server]\ntls_cert_file = "tls/cert.pem"\ntls_key_file = "/abs/key.pem"\n');
      const c = loadConfig({ path: join(dir, "config.toml"), env: {} });
      expect(c.server.tls_cert_file).toBe(join(dir, "tls/cert.pem"));
      expect(c.server.tls_key_file).toBe("/abs/key.pem");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("pointerToKey", () => {
    expect(pointerToKey("/channels/0/settings/token")).toBe("channels[0].settings.token");
  });
});
