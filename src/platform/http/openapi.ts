/**
 * The OpenAPI document (GET /api/public/v1/openapi.json) and the offline docs (/docs, /docs/guide). The document
 * is Elysia's (`toOpenAPISchema`) finished by openapi.document.ts `finishDocument`, whose head states the
 * conventions a module follows to be covered; its `webhooks` section comes from openapi.webhooks.ts.
 */
import { toOpenAPISchema } from "@elysiajs/openapi";
import type { EventTypeInfo } from "../events/events";
import { Elysia } from "elysia";
import { API_PREFIX } from "./api-guard.plugin";
import { docsPageCsp, staticPageCsp } from "./docs-csp";
import { DOCS_GUIDE_HTML } from "./docs-guide";
import { finishDocument, type Json } from "./openapi.document";

const docsPage = (specUrl: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8" />
<meta name="viewport" content="width=device-width, initial-scale=1" />
<title>Switchboard API</title>
<style>body{margin:0;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}.guide{padding:8px 16px;background:#f4f4f5;border-bottom:1px solid #ddd;font-size:14px}</style>
</head>
<body>
<div class="guide">New here? Read the <a href="/docs/guide">integration guide</a> (keys, idempotency, pagination, webhook signatures). <a href="${specUrl}">OpenAPI document</a>.</div>
<div id="app"></div>
<script src="/docs/scalar.js"></script>
<script>
Scalar.createApiReference("#app", {
  url: ${JSON.stringify(specUrl)},
  servers: [{ url: window.location.origin, description: "This server" }],
  withDefaultFonts: false,
  showDeveloperTools: "never",
  agent: { disabled: true },
  telemetry: false,
  hideClientButton: true,
  documentDownloadType: "json",
  proxyUrl: "",
});
</script>
</body>
</html>`;

/**
 * GET {API_PREFIX}/openapi.json, GET /docs and GET /docs/guide. The document is built once, on first
 * request (every route is registered by then), from the routes of the app this plugin is mounted in.
 */
export function openapiPlugin(opts: {
  title: string;
  version: string;
  description: string;
  serverUrl: string;
  exclude: string[];
  extraPaths?: Record<string, Json>;
  /** The event catalogue: the document's `webhooks` section. */
  eventTypes: readonly EventTypeInfo[];
}) {
  const specPath = `${API_PREFIX}/openapi.json`;
  const page = docsPage(specPath);
  const [pageCsp, guideCsp] = [docsPageCsp(page), staticPageCsp(DOCS_GUIDE_HTML)];
  let cached: Json | null = null;
  const plugin = new Elysia({ name: "openapi-doc" });
  const build = () => {
    // staticFile: false — else every path with a dot (the sources' qr.svg/qr.png) is left out as a "file".
    const raw = toOpenAPISchema(
      plugin as never,
      { paths: [...opts.exclude, specPath], staticFile: false } as never,
      undefined,
      undefined,
      "3.1.0" as never,
    ) as Json;
    const doc = finishDocument(raw, opts);
    // Hand-written path items for routes the generator cannot describe (they are published as given).
    Object.assign(doc.paths, opts.extraPaths ?? {});
    for (const item of Object.values<Json>(opts.extraPaths ?? {}))
      for (const op of Object.values<Json>(item))
        for (const tag of op.tags ?? []) if (!doc.tags.some((x: Json) => x.name === tag)) doc.tags.push({ name: tag, description: `${tag} operations` });
    doc.tags.sort((a: Json, b: Json) => a.name.localeCompare(b.name));
    return doc;
  };
  return plugin
    .get(specPath, () => new Response(JSON.stringify((cached ??= build())), { headers: { "content-type": "application/json" } }), { detail: { hide: true } })
    .get("/docs", () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": pageCsp } }), {
      detail: { hide: true },
    })
    .get("/docs/guide", () => new Response(DOCS_GUIDE_HTML, { headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": guideCsp } }), {
      detail: { hide: true },
    });
}
