/**
 * The public API, with the key of this browser tab. The key lives in sessionStorage only: it is gone when
 * the tab closes, never written to localStorage or a cookie, and sign-out removes it.
 */
const KEY = "switchboard.apiKey";
export const API = "/api/public/v1";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: { pointer: string; message: string }[] = [],
  ) {
    super(message);
  }
  /** "message (pointer: message; …)" for showing in the page. */
  describe(): string {
    const d = this.details.map((x) => `${x.pointer}: ${x.message}`).join("; ");
    return `${this.code}: ${this.message}${d ? ` (${d})` : ""}`;
  }
}

export const storedKey = (): string | null => sessionStorage.getItem(KEY);
export const storeKey = (key: string): void => sessionStorage.setItem(KEY, key);
export const forgetKey = (): void => sessionStorage.removeItem(KEY);

/** Called on a 401 (key revoked or expired while the page is open): the shell signs out. */
let onUnauthorized: (e: ApiError) => void = () => {};
export const whenUnauthorized = (fn: (e: ApiError) => void): void => {
  onUnauthorized = fn;
};

/**
 * An Idempotency-Key per write, so a retried click never does the work twice. Not crypto.randomUUID: it
 * exists only in secure contexts, and an appliance on a LAN may be served over plain HTTP.
 */
function idempotencyKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function toError(r: Response): Promise<ApiError> {
  try {
    const body = (await r.json()) as { error?: { code: string; message: string; details?: { pointer: string; message: string }[] } };
    if (body.error) return new ApiError(r.status, body.error.code, body.error.message, body.error.details ?? []);
  } catch {}
  return new ApiError(r.status, `HTTP_${r.status}`, r.statusText || "request failed");
}

export interface Page<T> {
  data: T[];
  page: { nextCursor: string | null; limit: number };
}

/** One call; returns the whole JSON body (`{data}` or `{data, page}`); throws ApiError. */
export async function call<T>(method: string, path: string, body?: unknown, key = storedKey()): Promise<T> {
  // Signed out while a poll was due: ask nothing (the appliance would only answer 401).
  if (!key) throw new ApiError(401, "SIGNED_OUT", "signed out");
  const headers: Record<string, string> = { authorization: `Bearer ${key ?? ""}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method === "POST" || method === "PATCH" || method === "PUT") headers["idempotency-key"] = idempotencyKey();
  const r = await fetch(`${API}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "omit",
  });
  if (!r.ok) {
    const e = await toError(r);
    // Only the signed-in key's refusal signs out; a key being tried at sign-in is just refused.
    if (r.status === 401 && key === storedKey()) onUnauthorized(e);
    throw e;
  }
  return (await r.json()) as T;
}

export const get = async <T>(path: string): Promise<T> => (await call<{ data: T }>("GET", path)).data;
export const list = <T>(path: string): Promise<Page<T>> => call<Page<T>>("GET", path);
export const post = async <T>(path: string, body: unknown = {}): Promise<T> => (await call<{ data: T }>("POST", path, body)).data;
export const del = async <T>(path: string): Promise<T> => (await call<{ data: T }>("DELETE", path)).data;

/** Query string from the defined values; arrays repeat the name (`?tag=a&tag=b`). */
export function qs(params: Record<string, string | number | string[] | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    for (const x of Array.isArray(v) ? v : [v]) u.append(k, String(x));
  }
  const q = u.toString();
  return q ? `?${q}` : "";
}

/**
 * A file as a streamed request body with upload progress. XMLHttpRequest, not fetch: fetch reports no
 * upload progress.
 */
export function upload<T>(path: string, file: File, contentType: string, onProgress: (fraction: number) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open("POST", `${API}${path}`);
    x.setRequestHeader("authorization", `Bearer ${storedKey() ?? ""}`);
    x.setRequestHeader("content-type", contentType);
    x.setRequestHeader("idempotency-key", idempotencyKey());
    x.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    x.onerror = () => reject(new ApiError(0, "NETWORK", "the upload failed"));
    x.onload = () => {
      let body: { data?: T; error?: { code: string; message: string; details?: { pointer: string; message: string }[] } } = {};
      try {
        body = JSON.parse(x.responseText);
      } catch {}
      if (x.status >= 200 && x.status < 300) resolve(body.data as T);
      else reject(new ApiError(x.status, body.error?.code ?? `HTTP_${x.status}`, body.error?.message ?? "upload refused", body.error?.details ?? []));
    };
    x.send(file);
  });
}

/**
 * For a view that loads again on every filter change: answers can come back out of order (a slow first filter's
 * after the second's), and the last one to arrive is not always the one on screen. `const turn = loads.next()`
 * before the request; after it, `loads.stale(turn)` is true when a later load has started (its answer will show).
 */
export function loadTurns(): { next(): number; stale(turn: number): boolean } {
  let latest = 0;
  return { next: () => ++latest, stale: (turn) => turn !== latest };
}
