/**
 * Build-time macros (imported `with { type: "macro" }`): they run while Bun bundles console.routes.ts — in
 * `make build` and when the server runs from source — and leave plain strings in the output, so the
 * compiled binary carries the console with no file beside it and `make build` stays one command.
 * NB! Bun.build cannot be called inside a macro (the bundler would wait on itself): the browser code is
 * bundled by a child `bun build`, the same Bun that runs this.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

const WEB = join(import.meta.dir, "web");

/** src/console/web/main.ts and its imports as one minified browser ES module. */
export function consoleScript(): string {
  const r = Bun.spawnSync([process.execPath, "build", join(WEB, "main.ts"), "--target=browser", "--format=esm", "--minify"], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (r.exitCode !== 0) throw new Error(`bundling the console failed:\n${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** A static file of src/console/web (the style sheet), as text. */
export function consoleAsset(name: string): string {
  return readFileSync(join(WEB, name), "utf8");
}
