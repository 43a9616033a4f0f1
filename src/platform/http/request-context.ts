/**
 * Per-request facts set by the first hook and read by the error handler and the access log, which run
 * where derived context may not exist yet (a parse error happens before `derive`).
 */
export interface RequestFacts {
  requestId: string;
  startedAt: number;
  apiKeyId?: string;
}

const facts = new WeakMap<Request, RequestFacts>();

export const setRequestFacts = (request: Request, f: RequestFacts) => facts.set(request, f);
export const requestFacts = (request: Request): RequestFacts | undefined => facts.get(request);

/**
 * The request's path as Elysia routes it: request.url up to `?` or `#`, from the first `/` after the
 * scheme's `//` — without building a URL object (~1 µs each, several hooks per request asked for it).
 * Dot segments and percent-escapes are left as they are, as Elysia's router leaves them.
 */
export function pathOf(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  for (let i = start; i < url.length; i++) {
    const c = url.charCodeAt(i);
    if (c === 63 /* ? */ || c === 35 /* # */) return url.slice(start, i);
  }
  return url.slice(start);
}
