/**
 * Headers on every response (DESIGN §23): `X-Content-Type-Options: nosniff` (a browser never guesses a
 * type from the bytes: uploaded media or an error body is never run as HTML or script) and
 * `Referrer-Policy: no-referrer` (links out of /docs or a media page do not leak signed URLs or paths).
 * Routes with stricter needs (media, /docs) add their own Content-Security-Policy.
 * Elysia's default headers, not a hook: they are on errors and early refusals too, and cost ~60 ns a
 * request where an onRequest hook cost ~150 ns (measured with app.handle).
 */
export const SECURITY_HEADERS = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" } as const;
