/**
 * /console: the appliance's own web page (DESIGN §22). Three responses, all inside the binary: the page,
 * its script (the browser code of ./web, bundled at build time by the macros of console.bundle.ts) and
 * its style sheet. The page holds no data and no key: it signs in with an API key typed by the user and
 * calls the public API like any other client, so it can do nothing the key's scopes do not allow.
 *
 * NB! The Content-Security-Policy is the console's main defence against script injection from data it
 * shows (names, messages): no inline script or style, nothing from another origin. Keep every asset a file
 * of 'self' and build the DOM with textContent, never innerHTML.
 */
import { Elysia } from "elysia";
import { consoleAsset, consoleScript } from "./console.bundle" with { type: "macro" };

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const SCRIPT = consoleScript();
const STYLE = consoleAsset("console.css");
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/console.css">
<script type="module" src="/console/console.js"></script>
</head>
<body><noscript>The Switchboard console needs JavaScript.</noscript></body>
</html>
`;

const headers = (type: string) => ({
  "content-type": type,
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  // The assets change with the binary; revalidating keeps an upgraded appliance from serving a stale mix.
  "cache-control": "no-cache",
});

const hide = { detail: { hide: true } };

export const consoleRoutes = () =>
  new Elysia()
    .get("/console", () => new Response(PAGE, { headers: headers("text/html; charset=utf-8") }), hide)
    .get("/console/", () => new Response(PAGE, { headers: headers("text/html; charset=utf-8") }), hide)
    .get("/console/console.js", () => new Response(SCRIPT, { headers: headers("text/javascript; charset=utf-8") }), hide)
    .get("/console/console.css", () => new Response(STYLE, { headers: headers("text/css; charset=utf-8") }), hide);
