import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../test/helpers/test-app";
import { CONSOLE_CSP } from "./console.routes";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test("/console, its script and its style sheet: served without a key, each with the strict CSP", async () => {
  for (const [path, type] of [
    ["/console", "text/html"],
    ["/console/", "text/html"],
    ["/console/console.js", "text/javascript"],
    ["/console/console.css", "text/css"],
  ] as const) {
    const res = await app.request("GET", `http://localhost${path}`, { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith(type);
    expect(res.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  }
  expect(CONSOLE_CSP).toContain("default-src 'self'");
  expect(CONSOLE_CSP).not.toMatch(/unsafe-(eval|inline)/);
});

test("the page loads only files of its own origin, and the script is the bundled browser code", async () => {
  const html = (await app.request("GET", "http://localhost/console", { key: null })).body as string;
  expect(html).not.toMatch(/(src|href)="(https?:)?\/\//); // nothing from another origin
  expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
  const js = (await app.request("GET", "http://localhost/console/console.js", { key: null })).body as string;
  expect(js).toContain("/api/public/v1");
  expect(js).not.toMatch(/\bimport\s*\(|from\s*["']https?:/); // one module, nothing fetched from elsewhere
});

test("the console is not an API operation: absent from the OpenAPI document; other methods are 405", async () => {
  const doc = (await app.request("GET", "http://localhost/api/public/v1/openapi.json", { key: null })).body as { paths: Record<string, unknown> };
  expect(Object.keys(doc.paths).filter((p) => p.startsWith("/console"))).toEqual([]);
  expect((await app.request("POST", "http://localhost/console", { key: null })).status).toBe(405);
});
