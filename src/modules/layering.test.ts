/**
 * Modules say what they need (issue 39): each declares its needs type (`<module>.needs.ts`, structural over the
 * platform's and db's types) and none imports `src/deps.ts`, the composition root that builds the app's
 * dependency object (and imports module files itself). `Deps` satisfies every needs type, so callers pass it on.
 *
 * Tests are not module code: like the test helpers they build an app, and pipeline.config.test checks that
 * buildDeps refuses a bad `[pipeline]`.
 *
 * Still outside the rule, on purpose, and listed here so the list can only shrink:
 * - `system/system.routes.ts` takes `databasePath` (the SQLite file's name, spelled once in deps.ts) for
 *   `switchboard_database_bytes`; moving it touches the CLI's importers, outside a types-only change.
 */
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { dirname, join, relative, resolve } from "node:path";

const MODULES = import.meta.dir;
const SRC = join(MODULES, "..");
const DEPS = join(SRC, "deps");

/** File → the only names it may import from deps.ts (values, not the Deps type). */
const ALLOWED: Record<string, string[]> = { "system/system.routes.ts": ["databasePath"] };

/** Every import's specifier and its braces' names: `import … from`, `export … from`, `import("…")`. */
function importsOf(text: string): { specifier: string; names: string[] }[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
  const found: { specifier: string; names: string[] }[] = [];
  for (const m of code.matchAll(/\b(?:import|export)\s+(?:type\s+)?([\s\S]*?)\s+from\s+["']([^"']+)["']/g)) {
    const braces = /\{([\s\S]*)\}/.exec(m[1]!)?.[1] ?? "";
    const names = braces
      .split(",")
      .map(
        (n) =>
          n
            .replace(/^\s*type\s+/, "")
            .trim()
            .split(/\s+as\s+/)[0]!,
      )
      .filter(Boolean);
    if (!/\{/.test(m[1]!) && m[1]!.trim()) names.push(m[1]!.trim());
    found.push({ specifier: m[2]!, names });
  }
  for (const m of code.matchAll(/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g)) found.push({ specifier: m[1]!, names: ["*"] });
  return found;
}

/** The imports of `file` (relative to src/modules) that reach deps.ts beyond what ALLOWED lets it take. */
function depsImports(file: string, text: string): string[] {
  return importsOf(text)
    .filter((i) => i.specifier.startsWith(".") && resolve(dirname(join(MODULES, file)), i.specifier).replace(/\.ts$/, "") === DEPS)
    .filter((i) => i.names.length === 0 || i.names.some((n) => !(ALLOWED[file] ?? []).includes(n)))
    .map((i) => `${file} imports { ${i.names.join(", ")} } from ${i.specifier}`);
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
    const hits = (file: string, text: string) => depsImports(file, text).length;
    expect(hits("messages/messages.service.ts", `import type { Deps } from "../../deps";`)).toBe(1);
    expect(hits("messages/messages.service.ts", `import { buildDeps } from "../../deps.ts";`)).toBe(1);
    expect(hits("messages/messages.service.ts", `export type { Deps } from "../../deps";`)).toBe(1);
    expect(hits("messages/messages.service.ts", `type D = import("../../deps").Deps;`)).toBe(1);
    expect(hits("messages/messages.service.ts", `import {\n  type Deps,\n} from "../../deps";`)).toBe(1);
    expect(hits("system/system.routes.ts", `import { databasePath } from "../../deps";`)).toBe(0);
    expect(hits("system/system.routes.ts", `import { databasePath, type Deps } from "../../deps";`)).toBe(1);
    expect(hits("messages/messages.service.ts", `import type { MessagesNeeds } from "./messages.needs";`)).toBe(0);
    expect(hits("messages/messages.service.ts", `// import type { Deps } from "../../deps";`)).toBe(0);
    expect(hits("messages/messages.service.ts", `import { createLedger } from "../billing/ledger.service";`)).toBe(0);
  });
});
