/** Helpers for end-to-end tests that drive the compiled binary (dist/switchboard) over loopback. */
import { spawn, spawnSync, type Subprocess } from "bun";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const BINARY = resolve(import.meta.dir, "../../dist/switchboard");

/** Builds the binary once if a test run starts without it (make test builds it first). */
export function ensureBinary(): string {
  if (!existsSync(BINARY)) {
    const r = spawnSync(["make", "build"], { cwd: resolve(import.meta.dir, "../.."), stdout: "inherit", stderr: "inherit" });
    if (r.exitCode !== 0) throw new Error("make build failed");
  }
  return BINARY;
}

export function tempDir(prefix = "sb-e2e-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function run(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) {
  const r = spawnSync([ensureBinary(), ...args], { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

export async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

export interface RunningServer {
  url: string;
  proc: Subprocess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

/** Starts `serve` and waits for /healthz; returns the base URL. `port`: listen there (e.g. to match `public_url`, or to restart on the same URL). */
export async function serve(configPath: string, env: Record<string, string> = {}, opts: { port?: number } = {}): Promise<RunningServer & { startMs: number }> {
  const port = opts.port ?? (await freePort());
  const started = performance.now();
  const proc = spawn([ensureBinary(), "serve", "--config", configPath], {
    env: { ...process.env, SWITCHBOARD_LISTEN: `127.0.0.1:${port}`, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const collect = async (s: ReadableStream<Uint8Array>) => {
    for await (const chunk of s) out += new TextDecoder().decode(chunk);
  };
  const collected = Promise.all([collect(proc.stdout as ReadableStream<Uint8Array>), collect(proc.stderr as ReadableStream<Uint8Array>)]);
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) break;
    } catch {}
    if (proc.exitCode !== null) throw new Error(`serve exited ${proc.exitCode}: ${out}`);
    await Bun.sleep(25);
  }
  const startMs = performance.now() - started;
  return {
    url,
    proc,
    startMs,
    output: () => out,
    async stop(signal = "SIGTERM") {
      proc.kill(signal);
      const code = await proc.exited;
      // NB! The process can exit before its last lines are read from the pipes: wait for them (at most 2 s).
      await Promise.race([collected, Bun.sleep(2000)]);
      return code;
    },
  };
}

/** Polls `fn` until it returns a value; after `timeoutMs` throws, naming `what` and adding `context()` (e.g. the server's output). */
export async function until<T>(
  what: string,
  fn: () => T | undefined | Promise<T | undefined>,
  { timeoutMs = 30_000, context = () => "" }: { timeoutMs?: number; context?: () => string } = {},
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${context()}`);
    await Bun.sleep(20);
  }
}
