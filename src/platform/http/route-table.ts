/**
 * The app's routes as patterns, filled once the app is composed (createApp): lets the API guard skip
 * authentication for paths no route serves (an unknown route is 404 with or without a key: routing before
 * auth), and the error plugin answer 405 with `Allow` for a known path asked with another method.
 */
const pattern = (path: string) =>
  new RegExp(`^${path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/:[^/]+/g, "[^/]+").replace(/\*/g, ".*")}/?$`);

export function createRouteTable() {
  let routes: { method: string; re: RegExp }[] = [];
  let filled = false;
  return {
    set(list: { method: string; path: string }[]): void {
      routes = list.map((r) => ({ method: r.method === "ALL" ? "*" : r.method.toUpperCase(), re: pattern(r.path) }));
      filled = true;
    },
    /** False until the app is composed: nothing may be concluded from an empty table. */
    get filled(): boolean {
      return filled;
    },
    /** Methods some route serves at this path ([] when none; "*" when a route takes every method). */
    methodsFor(path: string): string[] {
      return [...new Set(routes.filter((r) => r.re.test(path)).map((r) => r.method))];
    },
  };
}
export type RouteTable = ReturnType<typeof createRouteTable>;
