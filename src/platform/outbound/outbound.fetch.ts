/**
 * The one way to fetch a URL a caller supplied (message media, template header media, e-mail attachments,
 * social media; DESIGN §23). Per hop: the static checks (http/https, no metadata name), the host resolved
 * and EVERY address checked against the policy (outbound.policy.ts), then the request made to the checked
 * address itself (pinned: the URL's host replaced by the address, `Host` set, and for https the TLS server
 * name set to the host, so the certificate is still verified against the name). Redirects are followed by
 * hand through the same checks, at most 3. The body is read under a cap while streaming, and one timeout
 * covers resolving, connecting, headers and body.
 *
 * Failures never echo what the target answered (status text, body, type, size): a refusal says why in our
 * words (`URL_NOT_ALLOWED`), anything else says only that no usable file came, and whether a retry may help
 * (5xx, 408, 429 and network trouble: yes; other answers: no).
 */
import { lookup } from "node:dns/promises";
import type { OutboundPolicy } from "./outbound.policy";
import { literalIp, normaliseHost } from "./outbound.policy";

export const MAX_REDIRECTS = 3;

export type FetchFailureCode = "URL_NOT_ALLOWED" | "TOO_LARGE" | "NOT_USABLE" | "UNREACHABLE";

export type FetchUrlResult =
  | { ok: true; bytes: Uint8Array /** The answer's media type, lower case, without parameters ("" when none). */; contentType: string }
  | { ok: false; code: FetchFailureCode; retry: boolean /** Our words, starting with "URL …". */; message: string };

export interface FetchUrlOptions {
  url: string;
  /** Largest body accepted, or by media type (undefined: this type is not accepted at all). */
  maxBytes: number | ((contentType: string) => number | undefined);
  /** Covers resolving, connecting, headers and body (default: the fetcher's). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export type FetchUrl = (opts: FetchUrlOptions) => Promise<FetchUrlResult>;

/** Host name → every address it resolves to (IPv4 and IPv6). */
export type Resolve = (host: string) => Promise<string[]>;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const notAllowed = (why: string): FetchUrlResult => ({ ok: false, code: "URL_NOT_ALLOWED", retry: false, message: `URL not allowed: ${why}` });
const unreachable = (message: string): FetchUrlResult => ({ ok: false, code: "UNREACHABLE", retry: true, message });

export function createGuardedFetch({
  policy,
  fetch: fetchImpl,
  timeoutMs: defaultTimeoutMs,
  resolve = resolveAll,
}: {
  policy: OutboundPolicy;
  /** The transport (deps' carries our User-Agent); it only ever sees pinned addresses. */
  fetch: typeof fetch;
  timeoutMs: number;
  resolve?: Resolve;
}): FetchUrl {
  return async function fetchUrl(opts) {
    const timeoutMs = opts.timeoutMs ?? defaultTimeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const stop = new AbortController(); // our own abort: the size cap
    const signal = AbortSignal.any([deadline, stop.signal, ...(opts.signal ? [opts.signal] : [])]);
    const timedOut = () => unreachable(`URL did not serve its file within ${timeoutMs} ms`);

    let url: URL;
    try {
      url = new URL(opts.url);
    } catch {
      return notAllowed("must be an absolute http or https URL");
    }
    let response: Response | undefined;
    try {
      for (let hop = 0; ; hop++) {
        const problem = policy.staticProblem(url);
        if (problem) return notAllowed(hop === 0 ? problem : "it redirects to an address that is not allowed");
        const host = normaliseHost(url.hostname);
        const literal = literalIp(host);
        let addresses: string[];
        try {
          addresses = literal ? [literal] : await abortable(resolve(host), signal);
        } catch {
          if (deadline.aborted) return timedOut();
          return unreachable("URL's host does not resolve");
        }
        if (addresses.length === 0) return unreachable("URL's host does not resolve");
        for (const ip of addresses) {
          const refused = policy.addressProblem(ip);
          if (refused) return notAllowed(hop === 0 ? refused : "it redirects to an address that is not allowed");
        }
        response = await pinnedGet({ fetchImpl, url, addresses: literal ? [literal] : preferIpv4(addresses), signal });
        if (!response) return deadline.aborted ? timedOut() : unreachable("URL could not be reached");
        const location = REDIRECTS.has(response.status) ? response.headers.get("location") : null;
        if (location === null) break;
        await response.body?.cancel().catch(() => {});
        if (hop === MAX_REDIRECTS) return notAllowed(`more than ${MAX_REDIRECTS} redirects`);
        try {
          url = new URL(location, url);
        } catch {
          return { ok: false, code: "NOT_USABLE", retry: false, message: "URL did not serve a usable file" };
        }
      }

      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        const retry = response.status >= 500 || response.status === 408 || response.status === 429;
        return { ok: false, code: "NOT_USABLE", retry, message: "URL did not serve a usable file" };
      }
      const contentType = (response.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
      const cap = typeof opts.maxBytes === "number" ? opts.maxBytes : opts.maxBytes(contentType);
      if (cap === undefined) {
        await response.body?.cancel().catch(() => {});
        return { ok: false, code: "NOT_USABLE", retry: false, message: "URL did not serve a file of an accepted type" };
      }
      const tooLarge: FetchUrlResult = { ok: false, code: "TOO_LARGE", retry: false, message: `URL serves a file over the ${cap} byte limit` };
      if (Number(response.headers.get("content-length") ?? 0) > cap) {
        await response.body?.cancel().catch(() => {});
        return tooLarge;
      }
      const bytes = await readCapped(response, cap, stop);
      return bytes ? { ok: true, bytes, contentType } : tooLarge;
    } catch {
      // A body cut off, a reset, the deadline: nothing about it comes from the target's content.
      await response?.body?.cancel().catch(() => {});
      return deadline.aborted ? timedOut() : unreachable("URL could not be reached");
    }
  };
}

/**
 * One GET to the checked addresses in turn (the next only when a connection fails). NB! The URL's host is
 * replaced by the address, so nothing resolves the name again between the check and the connection (no
 * DNS rebinding); `Host` and, for https, the TLS server name keep the name (Bun 1.4.5 verifies the
 * certificate against `tls.serverName`: checked in outbound.fetch.test.ts).
 */
async function pinnedGet({
  fetchImpl,
  url,
  addresses,
  signal,
}: {
  fetchImpl: typeof fetch;
  url: URL;
  addresses: string[];
  signal: AbortSignal;
}): Promise<Response | undefined> {
  const host = normaliseHost(url.hostname);
  for (const ip of addresses) {
    const pinned = new URL(url);
    pinned.hostname = ip.includes(":") ? `[${ip}]` : ip;
    try {
      return await fetchImpl(pinned, {
        method: "GET",
        redirect: "manual",
        headers: { host: url.host, accept: "*/*" },
        signal,
        ...(url.protocol === "https:" && !literalIp(host) ? { tls: { serverName: host } } : {}),
      });
    } catch (err) {
      if (signal.aborted) throw err;
    }
  }
  return undefined;
}

/** The body, or null as soon as it passes `cap` (the rest is never read: the request is aborted). */
async function readCapped(response: Response, cap: number, stop: AbortController): Promise<Uint8Array | null> {
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > cap) {
      stop.abort();
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return bytes;
}

/** IPv4 first: a host with an AAAA record is often unreachable over IPv6 from an on-prem network. */
function preferIpv4(addresses: string[]): string[] {
  return [...addresses.filter((a) => !a.includes(":")), ...addresses.filter((a) => a.includes(":"))];
}

async function resolveAll(host: string): Promise<string[]> {
  return (await lookup(host, { all: true })).map((a) => a.address);
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => (signal.removeEventListener("abort", onAbort), resolve(v)),
      (e) => (signal.removeEventListener("abort", onAbort), reject(e)),
    );
  });
}

/** `fetch` that sends `User-Agent: <userAgent>` unless the call sets its own (DESIGN §23). */
export function withUserAgent(fetchImpl: typeof fetch, userAgent: string): typeof fetch {
  const f = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has("user-agent")) headers.set("user-agent", userAgent);
    return fetchImpl(input, { ...init, headers });
  };
  return Object.assign(f, { preconnect: fetchImpl.preconnect }) as typeof fetch;
}
