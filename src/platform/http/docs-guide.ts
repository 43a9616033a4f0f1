/** /docs/guide: the short integration guide served from the binary (no external assets). Mirrors docs/api.md. */
export const DOCS_GUIDE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8" /><meta name="viewport" content="width=device-width, initial-scale=1" />
<title>Switchboard API — integration guide</title>
<style>body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:760px;margin:2em auto;padding:0 1em;line-height:1.5}
pre{background:#f4f4f5;padding:.8em;overflow:auto}code{font-family:ui-monospace,Menlo,Consolas,monospace}</style></head>
<body>
<p><a href="/docs">← API reference</a> · <a href="/api/public/v1/openapi.json">OpenAPI document</a></p>
<h1>Integration guide</h1>

<h2>Authentication</h2>
<p>Create a key with <code>switchboard keys create --company &lt;slug&gt; --scopes messages:send,contacts:read</code>
and send it on every request: <code>Authorization: Bearer sb_live_…</code>. Each operation names the scope it needs
(<code>&lt;area&gt;:read</code>, <code>&lt;area&gt;:write</code>, <code>messages:send</code>; <code>*</code> grants all).
Missing or bad key: 401 <code>API_KEY_INVALID</code>; missing scope: 403 <code>API_SCOPE_MISSING</code>.</p>
<pre><code>curl -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" \\
  -d '{"channel":"whatsapp","to":{"phone":"+4915112345678"},"type":"template","template":{"name":"hello_world","language":"en_US"}}' \\
  $BASE/api/public/v1/messages</code></pre>

<h2>Errors</h2>
<p>Every error is <code>{"error": {"code", "message", "requestId", "details": [{"pointer", "message"}]}}</code>.
A 422 lists one detail per offending field; the pointer is a JSON Pointer into the body (<code>/to/phone</code>)
or <code>query:limit</code>, <code>header:Idempotency-Key</code>, <code>path:id</code>.</p>

<h2>Idempotency</h2>
<p>Send <code>Idempotency-Key: &lt;unique string, 1–255 characters&gt;</code> on a POST or PATCH to make a retry safe:
within 24 hours the same key with the same body replays the first successful response (with
<code>Idempotent-Replayed: true</code>) instead of doing the work twice; the same key with another body is 409
<code>IDEMPOTENCY_CONFLICT</code>. Errors are not stored, so a failed request may be retried with its key.</p>

<h2>Pagination</h2>
<p>Lists take <code>?limit=</code> (1–200, default 50) and <code>?cursor=</code>, and answer
<code>{"data": [...], "page": {"nextCursor": "…" | null, "limit": 50}}</code>. Pass <code>page.nextCursor</code> back as
<code>cursor</code> until it is <code>null</code>. Cursors are opaque and stable under concurrent inserts.</p>

<h2>Rate limits</h2>
<p>Each key has a token bucket; responses carry <code>RateLimit</code> and <code>RateLimit-Policy</code>. A refused
request is 429 <code>RATE_LIMITED</code> with <code>Retry-After</code> (seconds).</p>

<h2>Webhook signatures</h2>
<p>Deliveries follow Standard Webhooks: headers <code>webhook-id</code> (the event's id, the same on every retry —
use it to drop duplicates), <code>webhook-timestamp</code> (Unix seconds) and <code>webhook-signature</code>
(space-separated <code>v1,&lt;base64 HMAC-SHA256&gt;</code> of <code>"&lt;webhook-id&gt;.&lt;webhook-timestamp&gt;.&lt;raw body&gt;"</code>,
keyed with the base64-decoded part of the secret after <code>whsec_</code>). Verify over the raw body bytes and reject
timestamps older than 5 minutes. During a secret rotation two signatures are sent; accept either.</p>
<pre><code>import { Webhook } from "standardwebhooks";
const wh = new Webhook(process.env.SWITCHBOARD_WEBHOOK_SECRET); // "whsec_…"
const event = wh.verify(rawBody, { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig });</code></pre>
</body></html>
`;
