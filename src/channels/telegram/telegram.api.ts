/**
 * The Bot API call itself: `POST {base_url}/bot{token}/{method}` with a JSON or multipart body, and the
 * answer turned into a tagged result. Never throws for a provider answer or a network failure.
 */
export interface TelegramErrorBody {
  ok: false;
  error_code: number;
  description: string;
  parameters?: { retry_after?: number; migrate_to_chat_id?: number };
}

export type TelegramCallResult<T> =
  | { kind: "ok"; result: T }
  | { kind: "error"; httpStatus: number; error: TelegramErrorBody }
  /** No usable answer: connection refused/dropped, aborted, or a body that is not Bot API JSON. */
  | { kind: "network"; message: string; httpStatus?: number; aborted?: boolean };

export async function callTelegram<T>(opts: {
  fetch: typeof fetch;
  baseUrl: string;
  token: string;
  method: string;
  body: Record<string, unknown> | FormData;
  signal?: AbortSignal;
}): Promise<TelegramCallResult<T>> {
  const url = `${opts.baseUrl.replace(/\/+$/, "")}/bot${opts.token}/${opts.method}`;
  const isForm = opts.body instanceof FormData;
  let response: Response;
  try {
    response = await opts.fetch(url, {
      method: "POST",
      // NB! For FormData let fetch set Content-Type itself: it carries the multipart boundary.
      headers: isForm ? undefined : { "content-type": "application/json" },
      body: isForm ? (opts.body as FormData) : JSON.stringify(opts.body),
      signal: opts.signal,
    });
  } catch (err) {
    return { kind: "network", message: errorText(err), aborted: opts.signal?.aborted };
  }
  let parsed: unknown;
  try {
    parsed = await response.json();
  } catch (err) {
    // A dropped connection mid-body, or an HTML error page from a proxy in front of the API.
    return {
      kind: "network",
      message: `unreadable answer (HTTP ${response.status}): ${errorText(err)}`,
      httpStatus: response.status,
      aborted: opts.signal?.aborted,
    };
  }
  const body = parsed as { ok?: unknown; result?: unknown };
  if (body && body.ok === true) return { kind: "ok", result: body.result as T };
  if (body && body.ok === false && typeof (body as TelegramErrorBody).error_code === "number") {
    return { kind: "error", httpStatus: response.status, error: body as TelegramErrorBody };
  }
  return { kind: "network", message: `unexpected answer (HTTP ${response.status})`, httpStatus: response.status };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
