/**
 * The API's request guard, feature-blind:
 *   onRequest (every /api/public/v1 route but the OpenAPI document): authenticate the key (401), check its
 *   IP allow-list (403), take a rate-limit token (429) — before the body is even parsed;
 *   per route, `{ scope: "contacts:write" }` (or `"any"`): check the scope (403), then for POST/PATCH with
 *   an Idempotency-Key replay or claim the key.
 * Handlers get `auth` (the principal) and `idem.batch(status, fn)`, which runs fn's writes and stores
 * the idempotent response in one transaction and returns the `{data}` envelope.
 */
import { Elysia } from "elysia";
import type { Db } from "../../db/client";
import { AppError } from "../errors";
import { fingerprint, parseIdempotencyKey, type IdempotencyClaim, type IdempotencyStore } from "../idempotency/idempotency";
import { clientIp, compileRanges, ipInRanges } from "./ip-allow";
import type { RateDecision, RateLimiter } from "./rate-limit";
import { pathOf, requestFacts } from "./request-context";
import { hasScope, type Scope } from "./scopes";
import type { LicenseChecker, LicensedModule } from "../license/license";

export const API_PREFIX = "/api/public/v1";

/** What a key resolves to; supplied by the api-keys module (platform never reads its tables). */
export interface KeyPrincipal {
  keyId: string;
  companyId: string;
  /** The company's slug (licenses name companies by slug). */
  companySlug: string;
  name: string;
  prefix: string;
  scopes: string[];
  allowedIps: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  rateLimit: number | null;
}

export interface AuthenticatorDeps {
  now: () => Date;
  /** Looks a key up by the SHA-256 hex of the presented key: at once when cached, else a promise (the store's read). */
  resolveKey(hash: string): KeyPrincipal | null | Promise<KeyPrincipal | null>;
  markKeyUsed(keyId: string): void;
  limiter: RateLimiter;
  rateDefaults: { requestsPerSecond: number; burst: number };
  trustedProxies: string[];
}

export interface ApiGuardDeps {
  db: Db;
  authenticate: Authenticate;
  idempotency: IdempotencyStore;
  license: LicenseChecker;
  /** Paths under the prefix that need no key. */
  publicPaths?: string[];
}

const principals = new WeakMap<Request, KeyPrincipal>();
const claims = new WeakMap<Request, { claim: IdempotencyClaim; stored: boolean }>();

export function hashKey(key: string): string {
  return new Bun.CryptoHasher("sha256").update(key).digest("hex");
}

function presentedKey(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return m ? m[1]! : null;
  }
  return headers.get("x-api-key");
}

/**
 * Authenticates a request by its key: 401 (missing/unknown/revoked/expired), 403 IP_NOT_ALLOWED, 429
 * RATE_LIMITED. Sets the rate-limit headers on `set`. Used by the API guard and by routes outside the
 * API prefix that accept a key (the sandbox inbound simulation). `peer`: the connection's address, asked
 * only for a key with an IP allow-list (the server's lookup was ~1 % of a send's CPU).
 */
export function createAuthenticator(deps: AuthenticatorDeps) {
  const trusted = compileRanges(deps.trustedProxies);
  /** The checks after the lookup: revoked, expired, IP allow-list, rate limit. */
  function admit(
    principal: KeyPrincipal | null,
    request: Request,
    peer: () => string | undefined,
    headersOut: Record<string, unknown>,
  ): KeyPrincipal | Promise<KeyPrincipal> {
    if (!principal) throw new AppError("API_KEY_INVALID", "The API key is not valid", [{ pointer: "header:Authorization", message: "unknown key" }]);
    const facts = requestFacts(request);
    if (facts) facts.apiKeyId = principal.keyId;
    if (principal.revokedAt) throw new AppError("API_KEY_REVOKED", "The API key has been revoked");
    if (principal.expiresAt && principal.expiresAt.getTime() <= deps.now().getTime()) throw new AppError("API_KEY_EXPIRED", "The API key has expired");
    if (principal.allowedIps.length) {
      const ip = clientIp({ peer: peer(), forwardedFor: request.headers.get("x-forwarded-for"), trusted });
      if (!ipInRanges(ip, compileRanges(principal.allowedIps)))
        throw new AppError("IP_NOT_ALLOWED", `Requests from ${ip ?? "this address"} are not allowed for this key`);
    }
    const rate = principal.rateLimit ?? deps.rateDefaults.requestsPerSecond;
    const burst = principal.rateLimit
      ? Math.max(1, Math.ceil(principal.rateLimit * (deps.rateDefaults.burst / deps.rateDefaults.requestsPerSecond)))
      : deps.rateDefaults.burst;
    const decision = deps.limiter.take(principal.keyId, { ratePerSecond: rate, burst });
    return decision instanceof Promise ? decision.then((d) => limited(principal, d, headersOut)) : limited(principal, decision, headersOut);
  }
  function limited(principal: KeyPrincipal, decision: RateDecision, headersOut: Record<string, unknown>): KeyPrincipal {
    Object.assign(headersOut, decision.headers);
    if (!decision.allowed) throw new AppError("RATE_LIMITED", "Rate limit exceeded; retry later", [], { "retry-after": String(decision.retryAfterSeconds) });
    deps.markKeyUsed(principal.keyId);
    return principal;
  }
  /**
   * NB! The principal at once, without a promise, when the key is cached and the limiter keeps its buckets in
   * memory (SQLite: every request but a key's first); else a promise — a key read from the store, a bucket
   * taken in the database (PostgreSQL). A refusal is thrown, or rejects the promise.
   */
  return function authenticate(request: Request, peer: () => string | undefined, headersOut: Record<string, unknown>): KeyPrincipal | Promise<KeyPrincipal> {
    const key = presentedKey(request.headers);
    if (!key)
      throw new AppError("API_KEY_INVALID", "Missing API key: send Authorization: Bearer <key>", [{ pointer: "header:Authorization", message: "missing" }]);
    const principal = deps.resolveKey(hashKey(key));
    return principal instanceof Promise ? principal.then((p) => admit(p, request, peer, headersOut)) : admit(principal, request, peer, headersOut);
  };
}
export type Authenticate = ReturnType<typeof createAuthenticator>;

export function apiGuardPlugin(deps: ApiGuardDeps) {
  const publicPaths = new Set((deps.publicPaths ?? []).map((p) => API_PREFIX + p));
  const authenticate = deps.authenticate;

  return (
    new Elysia({ name: "api-guard" })
      .onRequest(({ request, server, set }) => {
        const path = pathOf(request);
        if (!path.startsWith(API_PREFIX + "/") || publicPaths.has(path)) return;
        const principal = authenticate(request, () => server?.requestIP(request)?.address, set.headers);
        // NB! A cached key is set at once (no promise per request); a miss returns the lookup's promise, which
        // Elysia awaits before routing — it awaits this hook because its source returns a call (Elysia's
        // isAsync reads the source: keep the `return x.then(` form, or the promise would become the response).
        if (!(principal instanceof Promise)) principals.set(request, principal);
        else return principal.then((p) => void principals.set(request, p));
      })
      // NB! Here and not in the macro: a macro's afterResponse does not run when the handler threw, and a
      // failed request must free its Idempotency-Key (errors are not stored; the client may retry).
      .onAfterResponse(({ request }) => {
        const c = claims.get(request);
        if (c) deps.idempotency.release(c.claim);
      })
      .macro({
        /** `{ license: "pipeline" }`: the route belongs to a licensed module (403 LICENSE_* / FEATURE_NOT_LICENSED). */
        // NB! The key, scope and license are checked in `transform`, before the body is validated: a caller
        // who may not use an operation gets 403, never the operation's validation rules (422).
        license: (module: LicensedModule) => ({
          detail: { "x-license": module } as { summary?: string },
          transform({ request }) {
            const auth = principals.get(request);
            if (!auth) throw new AppError("API_KEY_INVALID", "Missing API key");
            deps.license.check(auth.companySlug, module);
          },
        }),
        scope: (needed: Scope | "any") => ({
          // Read by the OpenAPI document (openapi.document.ts): the operation's bearer scope.
          detail: { "x-scope": needed } as { summary?: string },
          transform({ request }) {
            const auth = principals.get(request);
            if (!auth) throw new AppError("API_KEY_INVALID", "Missing API key");
            if (needed !== "any" && !hasScope(auth.scopes, needed)) throw new AppError("API_SCOPE_MISSING", `This operation needs the scope ${needed}`);
          },
          resolve({ request, body, set, status }) {
            const auth = principals.get(request);
            if (!auth) throw new AppError("API_KEY_INVALID", "Missing API key");

            const method = request.method;
            const rawKey = request.headers.get("idempotency-key");
            let claim: IdempotencyClaim | null = null;
            if (rawKey !== null && (method === "POST" || method === "PATCH" || method === "PUT")) {
              const key = parseIdempotencyKey(rawKey);
              const path = pathOf(request);
              claim = { apiKeyId: auth.keyId, key, method, path, fingerprint: fingerprint(method, path, body) };
            }
            /** The business write plus its replay record: one unit in whichever transaction runs it. */
            const write =
              <T>(code: number, fn: () => T | Promise<T>) =>
              () => {
                const d = fn();
                const stored = async (data: T) => {
                  if (claim) await deps.idempotency.storeOrConflict(claim, code, { data });
                  return data;
                };
                return d instanceof Promise ? d.then(stored) : stored(d);
              };
            const done = <T>(code: number, data: T): { data: T } => {
              const c = claims.get(request);
              if (c) c.stored = true;
              set.status = code;
              return { data };
            };
            // Free the key before the error response goes out (afterResponse runs only after it).
            const failed = (e: unknown): never => {
              if (claim) deps.idempotency.release(claim);
              throw e;
            };
            const idem = {
              /**
               * Runs `fn`'s writes and stores the response for replays in one unit of work (db.unit: group-committed
               * with the other writes of this event-loop turn, or nested in the caller's unit); `fn` may await its stores.
               * `shared`: see db.unit (on PostgreSQL, in a transaction with other such requests).
               */
              batch<T>(code: number, fn: () => T | Promise<T>, options?: { shared?: boolean }): Promise<{ data: T }> {
                return deps.db.unit(write(code, fn), options).then((data) => done(code, data), failed);
              },
            };
            if (!claim) return { auth, idem };
            // A request with an Idempotency-Key: its record is read first (a promise only here, not per request).
            const claimed = claim;
            const resolved = { auth, idem };
            // (Typed as the value it resolves to: Elysia awaits it — see the NB! of onRequest — and types the handlers' context by it.)
            return deps.idempotency.begin(claimed).then((replay) => {
              if (replay) {
                set.headers["idempotent-replayed"] = "true";
                set.headers["content-type"] = "application/json";
                // NB! The stored answer may belong to a group whose fsync has not finished (durable-reads.plugin.ts).
                const answer = status(replay.status as 200, JSON.parse(replay.body) as never);
                return deps.db.durable().then(() => answer) as never; // (Elysia awaits what resolve returns)
              }
              claims.set(request, { claim: claimed, stored: false });
              return resolved;
            }) as unknown as typeof resolved;
          },
          afterHandle({ request, response, set }) {
            // Routes that do not use idem.batch still get their 2xx stored (in its own transaction; their write
            // is done, so a record another process stored meanwhile is left as it is).
            const c = claims.get(request);
            const code = typeof set.status === "number" ? set.status : 200;
            if (c && !c.stored && code >= 200 && code < 300 && !(response instanceof Response)) {
              c.stored = true;
              // (Resolves to nothing: the response stays as it is. The `return x.then(` form makes Elysia await it.)
              return deps.idempotency.store(c.claim, code, response).then(() => undefined);
            }
          },
        }),
      })
      .as("global")
  );
}
