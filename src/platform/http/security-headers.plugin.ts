/**
 * Headers on every response (DESIGN §23): `X-Content-Type-Options: nosniff` (a browser never guesses a
 * type from the bytes: uploaded media or an error body is never run as HTML or script) and
 * `Referrer-Policy: no-referrer` (links out of /docs or a media page do not leak signed URLs or paths).
 * Routes with stricter needs (media, /docs) add their own Content-Security-Policy.
 */
import { Elysia } from "elysia";

export const securityHeadersPlugin = new Elysia({ name: "security-headers" })
  .onRequest(({ set }) => {
    set.headers["x-content-type-options"] = "nosniff";
    set.headers["referrer-policy"] = "no-referrer";
  })
  .as("global");
