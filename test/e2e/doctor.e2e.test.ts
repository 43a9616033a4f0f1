/**
 * `switchboard doctor` on the binary: a fresh sandbox install passes (exit 0); a provider whose clock is 10
 * minutes off is a warning (exit 1); an unreachable provider host is a failure (exit 2); --json lists checks.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { BINARY, freePort, run, tempDir } from "./binary";

let dir: string;
let init: { configPath: string };
let skewed: ReturnType<typeof Bun.serve>;
beforeAll(() => {
  dir = tempDir();
  init = JSON.parse(run(["init", "--dir", dir, "--json"]).stdout);
  // A "Telegram Bot API" whose clock is 10 minutes behind.
  // The Date header has whole seconds: the skew seen is 600 s plus the truncated fraction and half the
  // request's time, 600.0–601.x s.
  skewed = Bun.serve({ port: 0, fetch: () => new Response("{}", { headers: { date: new Date(Date.now() - 600_000).toUTCString() } }) });
});
afterAll(() => {
  skewed.stop(true);
  rmSync(dir, { recursive: true, force: true });
});

/** Spawned without blocking: the fake provider answers from this process's event loop. */
const doctor = async (config: string) => {
  const p = Bun.spawn([BINARY, "doctor", "--json", "--config", config], { stdout: "pipe", stderr: "pipe" });
  const [stdout, code] = await Promise.all([new Response(p.stdout).text(), p.exited]);
  return { code, report: JSON.parse(stdout) as { status: string; checks: { name: string; status: string; detail: string }[] } };
};
const telegram = (id: string, baseUrl: string) =>
  `\n[[channels]]\nid = "${id}"\ncompany = "default"\nchannel = "telegram"\nprovider = "telegram"\nname = "Bot ${id.slice(-2)}"\n[channels.settings]\nbot_token = "1:x"\nmode = "polling"\nbase_url = "${baseUrl}"\n`;

test("a fresh sandbox install: every check ok, exit 0", async () => {
  const { code, report } = await doctor(init.configPath);
  expect(report.status).toBe("ok");
  expect(code).toBe(0);
  expect(report.checks.map((c) => c.name)).toEqual(expect.arrayContaining(["config", "database", "schema", "jobs", "disk", "license", "clock"]));
  expect(run(["doctor", "--config", init.configPath]).stdout).toContain("All checks passed.");
});

test("a provider 10 minutes off: clock warning, exit 1; an unreachable provider: failure, exit 2", async () => {
  const warnCfg = `${dir}/warn.toml`;
  writeFileSync(warnCfg, readFileSync(init.configPath, "utf8") + telegram("0193a4b2-0000-7000-8000-00000000dd01", `http://127.0.0.1:${skewed.port}`));
  const warned = await doctor(warnCfg);
  expect(warned.code).toBe(1);
  expect(warned.report.checks.find((c) => c.name === "clock")).toMatchObject({ status: "warn", detail: expect.stringMatching(/^60[01]\.\d s against/) });
  expect(warned.report.checks.find((c) => c.name.startsWith("channel Bot 01"))).toMatchObject({
    status: "ok",
    detail: expect.stringContaining("reachable (HTTP 200"),
  });

  const failCfg = `${dir}/fail.toml`;
  writeFileSync(failCfg, readFileSync(warnCfg, "utf8"));
  appendFileSync(failCfg, telegram("0193a4b2-0000-7000-8000-00000000dd02", `http://127.0.0.1:${await freePort()}`));
  const failed = await doctor(failCfg);
  expect(failed.code).toBe(2);
  expect(failed.report.checks.find((c) => c.name.startsWith("channel Bot 02"))).toMatchObject({
    status: "fail",
    detail: expect.stringContaining("unreachable"),
  });
});
