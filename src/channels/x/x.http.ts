/**
 * One X API v2 call: the user-context Authorization header, a JSON body (string) or multipart form, the JSON
 * answer. Network trouble is PROVIDER_UNAVAILABLE (retried); an HTTP error goes through xFailure.
 */
import type { AdapterContext, SendResult } from "../channel.types";
import { xAuthorization } from "./x.auth";
import { xFailure, type XProblem } from "./x.errors";
import type { XAuthMode, XSettings } from "./x.settings";

type Failure = Extract<SendResult, { ok: false }>;

export async function xCall<T>(opts: {
  ctx: Pick<AdapterContext, "fetch" | "now">;
  settings: XSettings;
  auth: XAuthMode;
  method: string;
  url: string;
  body?: string | FormData;
}): Promise<{ ok: true; status: number; data: T | undefined } | Failure> {
  const { ctx, settings, auth, method, url, body } = opts;
  let response: Response;
  let answer: unknown;
  try {
    const headers: Record<string, string> = { authorization: xAuthorization({ settings, auth, method, url, now: ctx.now }) };
    if (typeof body === "string") headers["content-type"] = "application/json";
    response = await ctx.fetch(url, { method, headers, body });
    answer = await response.json().catch(() => undefined);
  } catch (err) {
    return { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: `X unreachable: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (response.ok) return { ok: true, status: response.status, data: answer as T | undefined };
  return xFailure({ status: response.status, problem: answer as XProblem | undefined, headers: response.headers, now: ctx.now() });
}
