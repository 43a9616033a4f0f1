/**
 * Modules say what they need (issue 39): each declares its needs type (`<module>.needs.ts`, structural over the
 * platform's and db's types) and none imports `src/deps.ts`, the composition root that builds the app's
 * dependency object (and imports module files itself). `Deps` satisfies every needs type, so callers pass it on.
 *
 * Tests are not module code: like the test helpers they build an app, and pipeline.config.test checks that
 * buildDeps refuses a bad `[pipeline]`.
 */
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { dirname, join, relative, resolve } from "node:path";

const MODULES = import.meta.dir;
const DEPS = join(MODULES, "..", "deps");

/** Every import's specifier: `import … from`, `export … from`, `import("…")` (comments left out). */
function specifiersOf(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  return [
    ...[...code.matchAll(/\b(?:import|export)\s[^;]*?\sfrom\s+["']([^"']+)["']/g)].map((m) => m[1]!),
    ...[...code.matchAll(/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]!),
  ];
}

/** The imports of `file` (relative to src/modules) that reach deps.ts. */
function depsImports(file: string, text: string): string[] {
  return specifiersOf(text)
    .filter((s) => s.startsWith(".") && resolve(dirname(join(MODULES, file)), s).replace(/\.ts$/, "") === DEPS)
    .map((s) => `${file} imports ${s}`);
}

describe("module layering", () => {
  test("no module file imports src/deps.ts", async () => {
    const offenders: string[] = [];
    let files = 0;
    for await (const path of new Glob("**/*.ts").scan(MODULES)) {
      const file = relative(MODULES, join(MODULES, path));
      if (file.endsWith(".test.ts")) continue;
      files++;
      offenders.push(...depsImports(file, await Bun.file(join(MODULES, file)).text()));
    }
    expect(files).toBeGreaterThan(100); // the scan saw the modules
    expect(offenders).toEqual([]);
  });

  test("the check catches what it is for", () => {
    const hits = (text: string) => depsImports("messages/messages.service.ts", text).length;
    expect(hits(`import type { Deps } from "../../deps";`)).toBe(1);
    expect(hits(`import { buildDeps } from "../../deps.ts";`)).toBe(1);
    expect(hits(`export type { Deps } from "../../deps";`)).toBe(1);
    expect(hits(`type D = import("../../deps").Deps;`)).toBe(1);
    expect(hits(`import {\n  type Deps,\n} from "../../deps";`)).toBe(1);
    expect(hits(`import type { MessagesNeeds } from "./messages.needs";`)).toBe(0);
    expect(hits(`// import type { Deps } from "../../deps";`)).toBe(0);
    expect(hits(`import { createLedger } from "../billing/ledger.service";`)).toBe(0);
  });
});
