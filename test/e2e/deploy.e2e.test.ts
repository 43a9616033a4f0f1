/**
 * deploy/: the systemd unit passes `systemd-analyze verify` (where the tool exists), and install.sh installs
 * under a temp root with the real binary — config written once by `init`, data in the state directory,
 * idempotent on a second run (config and data kept, binary replaced), --uninstall keeps data and config.
 * useradd and systemctl are stubbed on PATH (recorded, not run).
 */
import { afterAll, expect, test } from "bun:test";
import { spawnSync } from "bun";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { BINARY, tempDir } from "./binary";

const DEPLOY = resolve(import.meta.dir, "../../deploy");
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

test("the unit passes systemd-analyze verify, hardened, never MemoryDenyWriteExecute", () => {
  const unit = readFileSync(join(DEPLOY, "switchboard.service"), "utf8");
  expect(unit).toMatch(/^StateDirectory=switchboard$/m);
  expect(unit).toMatch(/^NoNewPrivileges=yes$/m);
  expect(unit).not.toMatch(/^MemoryDenyWriteExecute/m);
  const which = spawnSync(["sh", "-c", "command -v systemd-analyze"]);
  if (which.exitCode !== 0) {
    console.log("systemd-analyze not installed: verify skipped");
    return;
  }
  const dir = tempDir("sb-unit-");
  dirs.push(dir);
  // The unit names /usr/local/bin/switchboard; verify checks the executable exists, so point it at the build.
  writeFileSync(join(dir, "switchboard.service"), unit.replace("/usr/local/bin/switchboard", BINARY));
  const r = spawnSync(["systemd-analyze", "verify", join(dir, "switchboard.service")]);
  expect(r.stderr.toString()).toBe("");
  expect(r.exitCode).toBe(0);
});

test("install.sh under a temp root: installs, is idempotent, uninstalls keeping data and config", () => {
  const root = tempDir("sb-root-");
  const stubs = tempDir("sb-stubs-");
  dirs.push(root, stubs);
  const calls = join(stubs, "calls.log");
  for (const cmd of ["systemctl", "useradd", "chown", "chgrp"]) {
    writeFileSync(join(stubs, cmd), `#!/bin/sh\necho "${cmd} $*" >> ${calls}\n`);
    chmodSync(join(stubs, cmd), 0o755);
  }
  const env = { ...process.env, ROOT: root, PATH: `${stubs}:${process.env.PATH}` };
  const install = () => spawnSync(["sh", join(DEPLOY, "install.sh"), "--binary", BINARY], { env });

  const first = install();
  expect(first.exitCode).toBe(0);
  expect(existsSync(join(root, "usr/local/bin/switchboard"))).toBe(true);
  expect(existsSync(join(root, "etc/systemd/system/switchboard.service"))).toBe(true);
  const config = readFileSync(join(root, "etc/switchboard/config.toml"), "utf8");
  expect(config).toContain('data_dir = "/var/lib/switchboard"');
  expect(existsSync(join(root, "var/lib/switchboard/switchboard.db"))).toBe(true); // init's company and key, moved
  expect(existsSync(join(root, "etc/switchboard/data"))).toBe(false);
  expect(first.stdout.toString()).toContain("Admin API key"); // init printed the key once
  const log1 = readFileSync(calls, "utf8");
  expect(log1).toContain("systemctl enable switchboard.service");
  expect(log1).toContain("systemctl restart switchboard.service");

  // Again: the config is kept as edited, the data kept, the binary replaced.
  writeFileSync(join(root, "etc/switchboard/config.toml"), config + "\n# edited by the operator\n");
  mkdirSync(join(root, "var/lib/switchboard/media"), { recursive: true });
  const second = install();
  expect(second.exitCode).toBe(0);
  expect(readFileSync(join(root, "etc/switchboard/config.toml"), "utf8")).toContain("# edited by the operator");
  expect(existsSync(join(root, "var/lib/switchboard/media"))).toBe(true);
  expect(second.stdout.toString()).not.toContain("Admin API key");

  const un = spawnSync(["sh", join(DEPLOY, "install.sh"), "--uninstall"], { env });
  expect(un.exitCode).toBe(0);
  expect(existsSync(join(root, "usr/local/bin/switchboard"))).toBe(false);
  expect(existsSync(join(root, "etc/systemd/system/switchboard.service"))).toBe(false);
  expect(existsSync(join(root, "etc/switchboard/config.toml"))).toBe(true);
  expect(existsSync(join(root, "var/lib/switchboard/switchboard.db"))).toBe(true);
  expect(readFileSync(calls, "utf8")).toContain("systemctl disable --now switchboard.service");
});
