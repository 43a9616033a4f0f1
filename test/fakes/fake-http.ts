/**
 * Shared plumbing of the provider fakes: request recording (method, path, headers, parsed body, raw
 * bytes) and a queue of injected failures. Each fake speaks its provider's protocol on top of this.
 */

export interface RecordedRequest {
  method: string;
  /** Path without the query string. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  /** JSON body parsed, multipart fields as an object (files as `RecordedFile`), else the text. */
  body: unknown;
  raw: Uint8Array;
  at: Date;
}

export interface RecordedFile {
  file: true;
  filename: string;
  type: string;
  size: number;
  bytes: Uint8Array;
}

/**
 * A failure to serve instead of the normal answer:
 * - `status` + `body` (+ `headers`): an HTTP answer exactly as given (the provider's own error forms);
 * - `drop`: the connection is reset before a response arrives (the client sees a network error).
 */
export type InjectedFailure = { kind: "response"; status: number; body: unknown; headers?: Record<string, string> } | { kind: "drop" };

export class FailureQueue {
  private queue: { match: (r: RecordedRequest) => boolean; failure: InjectedFailure }[] = [];

  /** Serve `failure` to the next request for which `match` is true (once). */
  push(match: (r: RecordedRequest) => boolean, failure: InjectedFailure): void {
    this.queue.push({ match, failure });
  }

  take(request: RecordedRequest): InjectedFailure | undefined {
    const index = this.queue.findIndex((q) => q.match(request));
    if (index < 0) return undefined;
    return this.queue.splice(index, 1)[0].failure;
  }

  clear(): void {
    this.queue = [];
  }

  get size(): number {
    return this.queue.length;
  }
}

export async function recordRequest(req: Request): Promise<RecordedRequest> {
  const url = new URL(req.url);
  const raw = new Uint8Array(await req.arrayBuffer());
  const headers: Record<string, string> = {};
  req.headers.forEach((value, key) => (headers[key] = value));
  const type = headers["content-type"] ?? "";
  let body: unknown;
  if (raw.length > 0) {
    if (type.includes("application/json")) {
      try {
        body = JSON.parse(new TextDecoder().decode(raw));
      } catch {
        body = new TextDecoder().decode(raw);
      }
    } else if (type.includes("multipart/form-data") || type.includes("application/x-www-form-urlencoded")) {
      const form = await new Response(raw, { headers: { "content-type": type } }).formData();
      const fields: Record<string, unknown> = {};
      for (const [key, value] of form.entries()) {
        if (typeof value === "string") fields[key] = value;
        else {
          const file = value as File;
          const recorded: RecordedFile = { file: true, filename: file.name, type: file.type, size: file.size, bytes: new Uint8Array(await file.arrayBuffer()) };
          fields[key] = recorded;
        }
      }
      body = fields;
    } else {
      body = new TextDecoder().decode(raw);
    }
  }
  return { method: req.method, path: url.pathname, query: url.searchParams, headers, body, raw, at: new Date() };
}

/** Serve an injected failure. */
export function failureResponse(failure: InjectedFailure): Response {
  if (failure.kind === "drop") {
    // NB! Erroring the body stream makes Bun reset the socket before any byte is written: to the
    // client this is a dropped connection (ECONNRESET). Bun prints the error; that line is expected.
    return new Response(
      new ReadableStream({
        start(controller) {
          controller.error(new Error("fake: connection dropped on purpose"));
        },
      }),
    );
  }
  const body = typeof failure.body === "string" ? failure.body : JSON.stringify(failure.body);
  return new Response(body, {
    status: failure.status,
    headers: { "content-type": typeof failure.body === "string" ? "text/plain" : "application/json", ...failure.headers },
  });
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });
}
