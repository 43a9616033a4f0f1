/**
 * `switchboard <command> --help` prints that command's usage and exits 0, doing nothing else (issue 41, item
 * 13): run through src/main.ts as the binary runs it, in an empty directory, which must stay empty
 * (`init --help` must not write a config, `backup --help` no file).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const MAIN = resolve(import.meta.dir, "../main.ts");
const dir = mkdtempSync(join(tmpdir(), "sb-help-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (...args: string[]) => {
  const p = Bun.spawnSync([process.execPath, MAIN, ...args], { cwd: dir, env: { ...process.env, SWITCHBOARD_CONFIG: join(dir, "none.toml") } });
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() };
};

const COMMANDS = [
  "init",
  "serve",
  "migrate",
  "companies",
  "keys",
  "balance",
  "jobs",
  "templates",
  "backup",
  "restore",
  "migrate-to-postgres",
  "doctor",
  "license",
  "version",
];

test.each(COMMANDS)("%s --help: its usage, exit 0, nothing done", (name) => {
  const r = run(name, "--help");
  expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: "" });
  expect(r.out).toStartWith("usage:\n");
  const lines = r.out.split("\n").filter((l) => l.startsWith("  switchboard "));
  expect(lines.length).toBeGreaterThan(0);
  for (const l of lines) expect(l).toMatch(new RegExp(`^  switchboard ${name}( |$)`));
  expect(readdirSync(dir)).toEqual([]);
});

test("a subcommand's --help (and -h, and `help <command>`) narrows to its line", () => {
  const r = run("keys", "create", "--help");
  expect(r.code).toBe(0);
  expect(r.out.split("\n").filter((l) => l.startsWith("  switchboard "))).toEqual([expect.stringMatching(/^ {2}switchboard keys create --company SLUG/)]);
  expect(run("keys", "create", "-h").out).toBe(r.out);
  expect(run("help", "keys", "create").out).toBe(r.out);
  expect(run("keys", "--help").out).toContain("switchboard keys revoke ID");
});

test("a command without --help still runs (and fails on a missing flag with exit 1)", () => {
  const r = run("keys", "create");
  expect(r.code).toBe(1);
  expect(r.out).toBe("");
});
