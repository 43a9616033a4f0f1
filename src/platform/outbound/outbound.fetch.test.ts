import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGuardedFetch, withUserAgent, type Resolve } from "./outbound.fetch";
import { createOutboundPolicy, DEFAULT_OUTBOUND, type OutboundConfig } from "./outbound.policy";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const MB = 1024 * 1024;

/** An "internal service" on 127.0.0.1: every request is counted and the Host it was sent for noted. */
let hits = 0;
const hosts: string[] = [];
const internal = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  fetch(req) {
    hits++;
    hosts.push(req.headers.get("host") ?? "");
    const path = new URL(req.url).pathname;
    if (path === "/secret") return new Response("internal secret", { headers: { "content-type": "text/plain" } });
    if (path === "/missing")
      return new Response("no such thing here: internal detail", { status: 404, statusText: "Gone Fishing", headers: { "content-type": "text/plain" } });
    if (path === "/down") return new Response("boom", { status: 503 });
    if (path === "/stall") return new Promise<Response>(() => {});
    if (path === "/slow-body")
      return new Response(new ReadableStream({ start: (c) => c.enqueue(PNG) /* never closes */ }), { headers: { "content-type": "image/png" } });
    if (path === "/chunked-50mb") {
      // 50 MB in 64 KiB chunks, without Content-Length (chunked): only the streaming cap can stop it.
      let sent = 0;
      const chunk = new Uint8Array(64 * 1024).fill(7);
      return new Response(
        new ReadableStream({
          pull(c) {
            if (sent >= 50 * MB) return c.close();
            sent += chunk.byteLength;
            c.enqueue(chunk);
          },
        }),
        { headers: { "content-type": "image/png" } },
      );
    }
    if (path.startsWith("/hop/")) {
      const left = Number(path.slice(5));
      return new Response(null, { status: 302, headers: { location: left > 0 ? `/hop/${left - 1}` : "/image.png" } });
    }
    return new Response(PNG, { headers: { "content-type": "image/png; charset=binary" } });
  },
});
/** A redirector on 127.0.0.2 (allowed by a /32 in tests) that sends every request to the internal service. */
const redirector = Bun.serve({
  hostname: "127.0.0.2",
  port: 0,
  fetch: (req) => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${internal.port}${new URL(req.url).pathname}` } }),
});
/** Declares 600 MB and sends 64 bytes, then holds the connection: reading the body would wait for the timeout. */
const declaresHuge = Bun.listen({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    data(socket) {
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: image/png\r\ncontent-length: ${600 * MB}\r\n\r\n`);
      socket.write(new Uint8Array(64));
    },
  },
});
afterAll(() => {
  internal.stop(true);
  redirector.stop(true);
  declaresHuge.stop(true);
});

const local = (path: string) => `http://127.0.0.1:${internal.port}${path}`;
const fakeDns =
  (table: Record<string, string[]>): Resolve =>
  async (host) => {
    const a = table[host];
    if (!a) throw new Error(`ENOTFOUND ${host}`);
    return a;
  };

function fetcher(config: Partial<OutboundConfig> = {}, opts: { resolve?: Resolve; timeoutMs?: number; fetch?: typeof fetch } = {}) {
  return createGuardedFetch({
    policy: createOutboundPolicy({ ...DEFAULT_OUTBOUND, ...config }),
    fetch: opts.fetch ?? fetch,
    timeoutMs: opts.timeoutMs ?? 5000,
    resolve: opts.resolve,
  });
}

describe("guarded fetch: refusals reach nothing", () => {
  test.each([
    ["loopback", local("/secret")],
    ["localhost", `http://localhost:${internal.port}/secret`],
    ["IPv4-mapped loopback", `http://[::ffff:127.0.0.1]:${internal.port}/secret`],
    ["link-local", "http://169.254.169.254/latest/meta-data/"],
    ["IPv4-mapped link-local", "http://[::ffff:169.254.169.254]/latest/meta-data/"],
    ["metadata name", "http://metadata.google.internal/computeMetadata/v1/"],
    ["file:", "file:///etc/passwd"],
    ["data:", "data:image/png;base64,iVBORw0KGgo="],
  ])("%s is URL_NOT_ALLOWED", async (_name, url) => {
    const before = hits;
    const r = await fetcher()({ url, maxBytes: MB });
    expect(r).toMatchObject({ ok: false, code: "URL_NOT_ALLOWED", retry: false });
    expect(hits).toBe(before);
  });

  test("a name resolving to loopback (any of its addresses) is refused", async () => {
    const before = hits;
    const resolve = fakeDns({ "media.example.test": ["93.184.216.34", "127.0.0.1"] });
    const r = await fetcher({}, { resolve })({ url: `http://media.example.test:${internal.port}/secret`, maxBytes: MB });
    expect(r).toMatchObject({ ok: false, code: "URL_NOT_ALLOWED", message: "URL not allowed: its host is a loopback address" });
    expect(hits).toBe(before);
  });

  test("an allowed first hop redirecting to loopback is refused before the second hop", async () => {
    const before = hits;
    const r = await fetcher({ allow: ["127.0.0.2/32"] })({ url: `http://127.0.0.2:${redirector.port}/secret`, maxBytes: MB });
    expect(r).toEqual({ ok: false, code: "URL_NOT_ALLOWED", retry: false, message: "URL not allowed: it redirects to an address that is not allowed" });
    expect(hits).toBe(before);
  });

  test("private networks refused when allow_private_networks = false; deny refuses", async () => {
    const resolve = fakeDns({ "nas.lan": ["192.168.1.20"], "cdn.example": ["93.184.216.34"] });
    expect(await fetcher({ allow_private_networks: false }, { resolve })({ url: "http://nas.lan/a.png", maxBytes: MB })).toMatchObject({
      code: "URL_NOT_ALLOWED",
    });
    expect(await fetcher({ deny: ["93.184.216.0/24"] }, { resolve })({ url: "http://cdn.example/a.png", maxBytes: MB })).toMatchObject({
      code: "URL_NOT_ALLOWED",
    });
  });
});

describe("guarded fetch: what it fetches", () => {
  const allowed = { allow: ["127.0.0.0/8"] };

  test("allow = 127.0.0.0/8 fetches from loopback; the connection goes to the checked address with the name as Host", async () => {
    const resolve = fakeDns({ "media.example.test": ["127.0.0.1"] });
    const r = await fetcher(allowed, { resolve })({ url: `http://media.example.test:${internal.port}/image.png`, maxBytes: MB });
    expect(r).toEqual({ ok: true, bytes: PNG, contentType: "image/png" });
    expect(hosts.at(-1)).toBe(`media.example.test:${internal.port}`);
  });

  test("redirects are followed through the checks, at most 3", async () => {
    expect(await fetcher(allowed)({ url: local("/hop/2"), maxBytes: MB })).toMatchObject({ ok: true, bytes: PNG });
    const before = hits;
    expect(await fetcher(allowed)({ url: local("/hop/3"), maxBytes: MB })).toMatchObject({
      ok: false,
      code: "URL_NOT_ALLOWED",
      message: "URL not allowed: more than 3 redirects",
    });
    expect(hits - before).toBe(4); // the first request and three redirects; the fourth redirect is not followed
  });

  test("an error answer is not echoed: 4xx is final, 5xx is retried", async () => {
    const r404 = await fetcher(allowed)({ url: local("/missing"), maxBytes: MB });
    expect(r404).toEqual({ ok: false, code: "NOT_USABLE", retry: false, message: "URL did not serve a usable file" });
    expect(await fetcher(allowed)({ url: local("/down"), maxBytes: MB })).toMatchObject({ ok: false, code: "NOT_USABLE", retry: true });
  });

  test("a type the caller does not take is refused without naming it", async () => {
    const r = await fetcher(allowed)({ url: local("/secret"), maxBytes: (type) => (type === "image/png" ? MB : undefined) });
    expect(r).toEqual({ ok: false, code: "NOT_USABLE", retry: false, message: "URL did not serve a file of an accepted type" });
  });

  test("Content-Length over the cap is refused before reading", async () => {
    const started = performance.now();
    expect(await fetcher(allowed, { timeoutMs: 5000 })({ url: `http://127.0.0.1:${declaresHuge.port}/a.png`, maxBytes: 5 * MB })).toEqual({
      ok: false,
      code: "TOO_LARGE",
      retry: false,
      message: `URL serves a file over the ${5 * MB} byte limit`,
    });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("a chunked 50 MB answer stops at a 5 MB cap while streaming, memory flat", async () => {
    Bun.gc(true);
    const before = process.memoryUsage().rss;
    const started = performance.now();
    const r = await fetcher(allowed)({ url: local("/chunked-50mb"), maxBytes: 5 * MB });
    const ms = performance.now() - started;
    Bun.gc(true);
    const grew = process.memoryUsage().rss - before;
    expect(r).toMatchObject({ ok: false, code: "TOO_LARGE" });
    console.log(`streaming cap: 50 MB chunked answer, 5 MB cap: refused in ${ms.toFixed(0)} ms, RSS +${(grew / MB).toFixed(1)} MB`);
    expect(grew).toBeLessThan(30 * MB);
  });

  test("one timeout covers headers and body", async () => {
    for (const path of ["/stall", "/slow-body"]) {
      const started = performance.now();
      const r = await fetcher(allowed, { timeoutMs: 300 })({ url: local(path), maxBytes: MB });
      expect(r).toEqual({ ok: false, code: "UNREACHABLE", retry: true, message: "URL did not serve its file within 300 ms" });
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });

  test("an unresolvable host is retried later", async () => {
    expect(await fetcher({}, { resolve: fakeDns({}) })({ url: "http://nowhere.example.test/a.png", maxBytes: MB })).toEqual({
      ok: false,
      code: "UNREACHABLE",
      retry: true,
      message: "URL's host does not resolve",
    });
  });

  test("User-Agent: withUserAgent adds ours unless the call sets one", async () => {
    const seen: string[] = [];
    const echo = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (seen.push(req.headers.get("user-agent") ?? ""), new Response("ok")) });
    const f = withUserAgent(fetch, "Switchboard/9.9.9");
    await f(`http://127.0.0.1:${echo.port}/`);
    await f(`http://127.0.0.1:${echo.port}/`, { headers: { "User-Agent": "theirs" } });
    await f(new Request(`http://127.0.0.1:${echo.port}/`, { headers: { "x-a": "1" } }));
    echo.stop(true);
    expect(seen).toEqual(["Switchboard/9.9.9", "theirs", "Switchboard/9.9.9"]);
  });
});

describe.skipIf(!Bun.which("openssl"))("guarded fetch over https: pinned to the address, certificate checked against the name", () => {
  test("the TLS server name is the URL's host (a certificate for another name fails)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sb-tls-"));
    const made = Bun.spawnSync(
      [
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-days",
        "1",
        "-subj",
        "/CN=media.example.test",
        "-addext",
        "subjectAltName=DNS:media.example.test",
      ],
      { stderr: "pipe" },
    );
    expect(made.exitCode).toBe(0);
    const cert = await Bun.file(join(dir, "cert.pem")).text();
    const tls = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      tls: { cert, key: await Bun.file(join(dir, "key.pem")).text() },
      fetch: (req) => new Response(PNG, { headers: { "content-type": "image/png", "x-host": req.headers.get("host") ?? "" } }),
    });
    // Trust the test certificate; everything else (server name, pinning) is the fetcher's own.
    const trusting = ((input: Parameters<typeof fetch>[0], init?: RequestInit & { tls?: object }) =>
      fetch(input, { ...init, tls: { ...init?.tls, ca: cert } } as RequestInit)) as typeof fetch;
    const resolve = fakeDns({ "media.example.test": ["127.0.0.1"], "other.example.test": ["127.0.0.1"] });
    const f = fetcher({ allow: ["127.0.0.0/8"] }, { resolve, fetch: trusting });
    expect(await f({ url: `https://media.example.test:${tls.port}/a.png`, maxBytes: MB })).toEqual({ ok: true, bytes: PNG, contentType: "image/png" });
    expect(await f({ url: `https://other.example.test:${tls.port}/a.png`, maxBytes: MB })).toMatchObject({ ok: false, code: "UNREACHABLE" });
    tls.stop(true);
  });
});
