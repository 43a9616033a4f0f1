/**
 * The storage boundary (DESIGN §15, issue 35): modules, the platform and the channels reach storage only through
 * their own stores (`*.repository.ts` in a module, `*.store.ts` beside platform code). Outside `src/db/` and those
 * files nothing imports a driver, holds `$client` or branches on the engine — so the next step (stores with an
 * asynchronous contract, PostgreSQL on Bun.SQL) changes stores and `src/db/`, not services.
 *
 * Still outside the boundary, on purpose, and listed here so the list can only shrink:
 * - `src/cli/`: operator commands (migrate, doctor, admin, migrate-to-postgres) open and inspect databases
 *   themselves; `migrate-to-postgres` copies between the two engines by nature.
 * - `src/deps.ts`: the wiring chooses the shared (database-backed) or in-memory rate limiter and throttle by engine.
 */
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { join, relative } from "node:path";

const SRC = join(import.meta.dir, "..");
const EXEMPT = [/^cli\//, /^deps\.ts$/];
const INSIDE = (file: string) => file.startsWith("db/") || /\.(store|repository)\.ts$/.test(file);

const RULES: { name: string; pattern: RegExp }[] = [
  { name: "imports a driver", pattern: /from\s+["'](bun:sqlite|drizzle-orm\/bun-sqlite|[./]*\/db\/postgres\/[^"']+)["']/ },
  { name: "holds the driver ($client)", pattern: /\$client\b/ },
  { name: "branches on the engine", pattern: /\.engine\s*[!=]==|\bengineOf\(|\bperEngine\(/ },
  { name: "builds a query", pattern: /\b(db|tx)\.(select|insert|update|delete)\(|\b(insertRow|updateRow)\(/ },
];

/** The code of a file without its comments (a rule named in a comment is not a use). */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`])\/\/.*$/gm, "$1");
}

describe("storage boundary", () => {
  test("no file outside src/db and the stores imports a driver, holds $client, branches on the engine or builds a query", async () => {
    const offenders: string[] = [];
    let files = 0;
    for await (const path of new Glob("**/*.ts").scan(SRC)) {
      const file = relative(SRC, join(SRC, path));
      if (file.endsWith(".test.ts") || INSIDE(file) || EXEMPT.some((e) => e.test(file)) || file.startsWith("console/web/")) continue;
      files++;
      const lines = code(await Bun.file(join(SRC, file)).text()).split("\n");
      lines.forEach((line, i) => {
        for (const rule of RULES) if (rule.pattern.test(line)) offenders.push(`${file}:${i + 1} ${rule.name}: ${line.trim()}`);
      });
    }
    expect(files).toBeGreaterThan(100); // the scan saw the source tree
    expect(offenders).toEqual([]);
  });

  test("the rules catch what they are for", () => {
    const hits = (line: string) => RULES.filter((r) => r.pattern.test(code(line))).map((r) => r.name);
    expect(hits(`import { Database } from "bun:sqlite";`)).toEqual(["imports a driver"]);
    expect(hits(`import { PgConnection } from "../../db/postgres/libpq";`)).toEqual(["imports a driver"]);
    expect(hits(`const row = db.$client.query("SELECT 1").get();`)).toEqual(["holds the driver ($client)"]);
    expect(hits(`if (db.engine === "postgres") run();`)).toEqual(["branches on the engine"]);
    expect(hits(`const rows = db.select().from(contacts).all();`)).toEqual(["builds a query"]);
    expect(hits(`insertRow(db, ledgerEntries, entry);`)).toEqual(["builds a query"]);
    expect(hits(`// db.$client is not used here`)).toEqual([]);
    expect(hits(`pending.delete(id);`)).toEqual([]);
  });
});
