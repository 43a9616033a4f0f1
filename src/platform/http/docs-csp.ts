/**
 * Content-Security-Policy for the docs pages (DESIGN §23): nothing loads from anywhere but the appliance,
 * and the only inline script that runs is ours, allowed by its hash (no 'unsafe-inline' for scripts).
 * Scalar (the /docs UI) needs: its bundle (/docs/scalar.js, 'self'); the inline call that starts it; inline
 * styles (it injects <style> elements and style attributes at run time); data: images (icons); fetches of the
 * OpenAPI document and "try it" requests to this origin. Its `new Function("")` is a feature probe inside
 * try/catch (zod): refused here, and it falls back — no 'unsafe-eval'.
 */
import { createHash } from "node:crypto";

const hashes = (html: string, tag: "script" | "style") =>
  [...html.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g"))].map((m) => `'sha256-${createHash("sha256").update(m[1]!).digest("base64")}'`).join(" ");

const COMMON = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The Scalar page: `html` is the page as served (its inline <script> is hashed). */
export const docsPageCsp = (html: string) =>
  `${COMMON}; script-src 'self' ${hashes(html, "script")}; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'`;

/** A static page without script (the guide): its inline <style> by hash. */
export const staticPageCsp = (html: string) => `${COMMON}; style-src ${hashes(html, "style")}`;

/** Scripts and other files served to the docs pages: they render nothing themselves. */
export const ASSET_CSP = COMMON;
