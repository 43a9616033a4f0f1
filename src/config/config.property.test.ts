/** Property tests (fast-check) of the config's `env:NAME` / `file:/path` values, beside the examples in config.test.ts. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { ConfigError, parseConfig } from "./config.load";

const dir = mkdtempSync(join(tmpdir(), "sb-config-prop-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A config whose only free value is a channel setting (settings take any value). */
const withSetting = (value: unknown) => ({
  channels: [{ id: "0193a4b2-0000-7000-8000-000000000001", channel: "telegram", name: "t", settings: { token: value, nested: [{ deep: value }] } }],
});
const settingsOf = (raw: unknown, env: Record<string, string | undefined>) =>
  parseConfig(raw, { env }).channels[0]!.settings as { token: unknown; nested: { deep: unknown }[] };

const anyText = fc.string({ unit: "binary", maxLength: 50 });

test("property: env:NAME resolves to exactly the variable's value, wherever it sits, for any name and value", () => {
  fc.assert(
    fc.property(anyText, anyText, (name, value) => {
      const s = settingsOf(withSetting(`env:${name}`), { [name]: value });
      expect(s.token).toBe(value);
      expect(s.nested[0]!.deep).toBe(value);
    }),
  );
});

test("property: an unset env:NAME is a ConfigError naming the key", () => {
  fc.assert(
    fc.property(anyText, (name) => {
      let error: unknown;
      try {
        parseConfig(withSetting(`env:${name}`), { env: {} });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toContain('key "channels[0].settings.token"');
    }),
  );
});

test("property: file:/path resolves to the file's text less one final line end", () => {
  let n = 0;
  fc.assert(
    fc.property(anyText, fc.constantFrom("", "\n", "\r\n", "\n\n"), (text, end) => {
      const path = join(dir, `secret-${n++}`);
      writeFileSync(path, text + end);
      const expected = (text + end).replace(/\r?\n$/, "");
      expect(settingsOf(withSetting(`file:${path}`), {}).token).toBe(expected);
    }),
    { numRuns: 200 },
  );
});

test("property: a string that is not env:/file: is left exactly as written; non-strings pass through", () => {
  fc.assert(
    fc.property(
      fc.oneof(
        anyText.filter((s) => !s.startsWith("env:") && !s.startsWith("file:")),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
      ),
      (value) => {
        expect(settingsOf(withSetting(value), {}).token).toEqual(value);
      },
    ),
  );
});

test("property: a file: that cannot be read is a ConfigError naming the key", () => {
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z0-9._-]{1,20}$/), (name) => {
      expect(() => parseConfig(withSetting(`file:${join(dir, "missing", name)}`), { env: {} })).toThrow(ConfigError);
    }),
    { numRuns: 50 },
  );
});

test("env: names of Object.prototype members are variables like any other (found by the property above)", () => {
  for (const name of ["toString", "valueOf", "constructor", "__proto__", "hasOwnProperty"]) {
    expect(() => parseConfig(withSetting(`env:${name}`), { env: {} })).toThrow(ConfigError);
    expect(settingsOf(withSetting(`env:${name}`), { [name]: "s" }).token).toBe("s");
  }
});
