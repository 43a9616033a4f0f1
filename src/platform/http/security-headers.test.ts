/**
 * Headers that keep a browser from turning our answers against the appliance (DESIGN §23): nosniff and
 * no-referrer on every response, a sandboxing CSP on media bytes (uploads are attacker-chosen: an SVG or
 * HTML file must never run as a page of our origin), and a strict CSP on the docs pages whose only inline
 * script is allowed by its hash.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { BASE, createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { modulesOf } from "../../assembly";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

const get = (path: string, headers: Record<string, string> = {}) => app.app.handle(new Request(`http://localhost${path}`, { headers }));

async function upload(bytes: Uint8Array | string, name: string, type: string): Promise<string> {
  const form = new FormData();
  form.append("file", new File([bytes], name, { type }));
  const res = await app.app.handle(new Request(`${BASE}/media`, { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: form }));
  expect(res.status).toBe(201);
  return ((await res.json()) as { data: { id: string } }).data.id;
}

const SVG = `<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("/api/public/v1/me")</script></svg>`;
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4]);

describe("every response", () => {
  test.each([
    ["a probe", "/healthz", {}, 200],
    ["an API error (no key)", "/api/public/v1/me", {}, 401],
    ["an unknown path", "/nope/at/all", {}, 404],
    ["a request refused in an early hook (bad X-Request-Id)", "/api/public/v1/me", { "x-request-id": "bad id!" }, 422],
    ["/metrics refused", "/metrics", {}, 401],
  ])("%s: nosniff and no-referrer", async (_, path, headers, status) => {
    const res = await get(path, headers as Record<string, string>);
    expect(res.status).toBe(status as number);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
  });

  test("an API answer and the media bytes too (a Response a route built itself)", async () => {
    const id = await upload(PNG, "pic.png", "image/png");
    for (const path of ["/api/public/v1/me", `/api/public/v1/media/${id}/content`]) {
      const res = await get(path, { authorization: `Bearer ${app.key}` });
      expect(res.status).toBe(200);
      expect([res.headers.get("x-content-type-options"), res.headers.get("referrer-policy")]).toEqual(["nosniff", "no-referrer"]);
    }
  });
});

describe("media bytes: sandboxed, attachment unless a checked raster image, video or audio", () => {
  test.each([
    ["an SVG with a script", SVG, "evil.svg", "image/svg+xml", "attachment"],
    ["an HTML file", "<html><script>alert(1)</script></html>", "page.html", "text/html", "attachment"],
    ["an XML file", "<?xml version='1.0'?><x/>", "a.xml", "application/xml", "attachment"],
    ["a PNG", PNG, "pic.png", "image/png", "inline"],
  ])("%s: the signed social link and GET /media/:id/content", async (_, bytes, name, type, linkDisposition) => {
    const id = await upload(bytes, name, type);
    const link = new URL(await modulesOf(app.deps).social.service.mediaLinks.link(app.company.id, id));
    const served = await get(`${link.pathname}${link.search}`);
    const content = await get(`/api/public/v1/media/${id}/content`, { authorization: `Bearer ${app.key}` });
    for (const [res, disposition] of [
      [served, linkDisposition],
      [content, "attachment"], // the API's download is always a download
    ] as const) {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("content-disposition")).toBe(`${disposition}; filename*=UTF-8''${name}`);
      expect(res.headers.get("content-type")).toStartWith(type);
    }
  });
});

describe("docs pages: strict CSP", () => {
  const directives = (csp: string) =>
    Object.fromEntries(
      csp
        .split(";")
        .map((d) => d.trim().split(/\s+/))
        .map(([k, ...v]) => [k!, v]),
    );

  test("/docs: scripts only from the appliance plus the page's own inline script by hash; nothing from elsewhere", async () => {
    const res = await get("/docs");
    const html = await res.text();
    const csp = directives(res.headers.get("content-security-policy")!);
    const inline = html.match(/<script>([\s\S]*?)<\/script>/)![1]!;
    expect(csp["script-src"]).toEqual(["'self'", `'sha256-${createHash("sha256").update(inline).digest("base64")}'`]);
    expect(csp["default-src"]).toEqual(["'none'"]);
    expect(csp["connect-src"]).toEqual(["'self'"]);
    expect(csp["frame-ancestors"]).toEqual(["'none'"]);
    expect(csp["base-uri"]).toEqual(["'none'"]);
    // Nothing anywhere may come from another host.
    expect(
      Object.values(csp)
        .flat()
        .filter((v) => !v.startsWith("'") && v !== "data:"),
    ).toEqual([]);
  });

  test("/docs/guide: no script at all, its inline style by hash; /docs/scalar.js: nothing", async () => {
    const guide = await get("/docs/guide");
    const csp = directives(guide.headers.get("content-security-policy")!);
    expect(csp["script-src"]).toBeUndefined(); // falls back to default-src 'none'
    expect(csp["default-src"]).toEqual(["'none'"]);
    expect(csp["style-src"]![0]).toMatch(/^'sha256-[A-Za-z0-9+/]+=*'$/);
    const script = await get("/docs/scalar.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-security-policy")).toStartWith("default-src 'none'");
  });
});
