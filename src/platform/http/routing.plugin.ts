/**
 * Routing before authentication: a path no route serves is 404 NOT_FOUND and a known path asked with a
 * method it does not serve is 405 METHOD_NOT_ALLOWED with `Allow` — both before the API guard looks for a
 * key (its onRequest is registered after this one), so a typo is not reported as a missing key.
 * The table is built from the app's routes on the first request (all routes are registered by then).
 */
import { Elysia } from "elysia";
import { AppError } from "../errors";
import { pathOf } from "./request-context";

interface RouteShape {
  pattern: RegExp;
  methods: Set<string>;
}

function compile(path: string): RegExp {
  const body = path
    .split("/")
    .map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? (seg.endsWith("?") ? "?[^/]*" : "[^/]+") : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${body}/?$`);
}

/** The methods of every route whose pattern matches `path`. */
function methodsOf(patterns: RouteShape[], path: string): Set<string> {
  const methods = new Set<string>();
  for (const r of patterns) if (r.pattern.test(path)) for (const m of r.methods) methods.add(m);
  return methods;
}

export function routingPlugin() {
  // Paths without parameters answer from a map (one lookup for POST /messages); the rest by pattern.
  let table: { exact: Map<string, Set<string>>; patterns: RouteShape[] } | null = null;
  const plugin = new Elysia({ name: "routing" });
  const build = () => {
    const byPath = new Map<string, Set<string>>();
    for (const r of (plugin as unknown as { getGlobalRoutes(): { method: string; path: string }[] }).getGlobalRoutes()) {
      const set = byPath.get(r.path) ?? byPath.set(r.path, new Set()).get(r.path)!;
      set.add(r.method.toUpperCase());
    }
    const patterns = [...byPath].map(([path, methods]) => ({ pattern: compile(path), methods }));
    const exact = new Map<string, Set<string>>();
    for (const [path] of byPath) {
      if (path.includes(":") || path.includes("*")) continue;
      const methods = methodsOf(patterns, path); // a parameter route may match it too
      exact.set(path, methods);
      if (!path.endsWith("/")) exact.set(`${path}/`, methods);
    }
    return { exact, patterns };
  };
  return plugin
    .onRequest(({ request }) => {
      const method = request.method.toUpperCase();
      if (method === "OPTIONS") return;
      const path = pathOf(request);
      table ??= build();
      const methods = table.exact.get(path) ?? methodsOf(table.patterns, path);
      if (methods.has("ALL") || methods.has(method) || (method === "HEAD" && methods.has("GET"))) return;
      if (!methods.size) throw new AppError("NOT_FOUND", "No such route");
      const allowed = new Set(methods);
      if (allowed.has("GET")) allowed.add("HEAD");
      const allow = [...allowed].sort().join(", ");
      throw new AppError("METHOD_NOT_ALLOWED", `${method} is not allowed on this path; allowed: ${allow}`, [], { allow });
    })
    .as("global");
}
