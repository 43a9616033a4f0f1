/**
 * One Graph API call through `ctx.fetch`: Bearer auth, JSON or multipart body, timeout, and every
 * non-success outcome already turned into a SendFailure (so adapters never throw for a provider answer).
 */
import type { AdapterContext } from "../channel.types";
import { failureFromGraphResponse, failureFromNetworkError, type SendFailure } from "./meta.errors";

export type GraphResult<T> = { ok: true; status: number; body: T } | { ok: false; failure: SendFailure };

/** Joins `base_url` (which carries the version, e.g. `https://graph.facebook.com/v23.0`) and a path. */
export function graphUrl({ baseUrl, path, query }: { baseUrl: string; path: string; query?: Record<string, string | undefined> }): string {
  const url = new URL(`${baseUrl.replace(/\/+$/, "")}/${path.replace(/^\/+/, "")}`);
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) url.searchParams.set(key, value);
  return url.toString();
}

export async function graphRequest<T>({
  ctx,
  token,
  method,
  url,
  json,
  form,
  timeoutMs,
}: {
  ctx: Pick<AdapterContext, "fetch" | "now" | "log">;
  token: string;
  method: "GET" | "POST" | "DELETE";
  url: string;
  json?: unknown;
  form?: FormData;
  /** Own deadline; without it the call is bounded by `ctx.fetch` (channel adapters: `requestTimeoutMs`). */
  timeoutMs?: number;
}): Promise<GraphResult<T>> {
  // The token travels in the header, never in the query string, so it stays out of proxy and access logs.
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: "application/json" };
  let body: RequestInit["body"];
  if (json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(json);
  } else if (form) {
    body = form; // fetch sets the multipart boundary itself
  }

  let response: Response;
  try {
    // NB! A network error after the bytes left may still have delivered the message. Graph has no
    // idempotency key, so a retry can duplicate it: at-least-once, as the engine documents.
    response = await ctx.fetch(url, { method, headers, body, signal: timeoutMs ? AbortSignal.timeout(timeoutMs) : undefined });
  } catch (error) {
    ctx.log.warn({ err: error, method, url: redactUrl(url) }, "graph request failed without an answer");
    return { ok: false, failure: failureFromNetworkError(error) };
  }

  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    return { ok: false, failure: failureFromNetworkError(error) };
  }
  let parsed: unknown;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }

  if (!response.ok) {
    const failure = failureFromGraphResponse({ status: response.status, body: parsed, headers: response.headers, now: ctx.now() });
    ctx.log.warn({ status: response.status, providerCode: failure.providerCode, reason: failure.reason, url: redactUrl(url) }, "graph request refused");
    return { ok: false, failure };
  }
  if (parsed === undefined) {
    // A 2xx we cannot read: the call may have worked. Retrying risks a duplicate, giving up risks a loss;
    // we retry (at-least-once) and say so.
    return {
      ok: false,
      failure: {
        ok: false,
        retry: true,
        reason: "PROVIDER_UNAVAILABLE",
        providerCode: `http_${response.status}`,
        message: "Graph API answered with an unreadable body",
      },
    };
  }
  return { ok: true, status: response.status, body: parsed as T };
}

function redactUrl(url: string): string {
  const u = new URL(url);
  u.searchParams.delete("access_token");
  return u.toString();
}
