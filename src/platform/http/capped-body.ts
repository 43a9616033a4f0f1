/**
 * Reads a request body up to a size cap, for routes that must see the exact bytes (provider hooks check a
 * signature over them) but must not let an unauthenticated sender make the process hold an arbitrary amount.
 *
 * NB! Bun's `maxRequestBodySize` is one value for the whole server (src/cli/serve.ts sets it to 4 GiB for the
 * streamed contact import), so it cannot protect one route with a smaller cap: this does, twice — by the
 * declared `Content-Length` before a byte is read, and by counting while streaming (a chunked body declares
 * nothing), cancelling the stream at the cap instead of buffering past it.
 */
import { AppError } from "../errors";

export function tooLarge(maxBytes: number): AppError {
  const mb = maxBytes / (1024 * 1024);
  return new AppError("PAYLOAD_TOO_LARGE", `The request body is over the limit of ${mb} MB`, [{ pointer: "/", message: `must be at most ${mb} MB` }]);
}

/** Throws PAYLOAD_TOO_LARGE (413) when the declared length is over the cap; call it before anything else reads. */
export function checkDeclaredLength(request: Request, maxBytes: number): void {
  const declared = request.headers.get("content-length");
  if (declared !== null && !(Number(declared) <= maxBytes)) throw tooLarge(maxBytes);
}

/** The body's bytes, or PAYLOAD_TOO_LARGE (413) as soon as more than `maxBytes` have arrived. */
export async function readCappedBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  checkDeclaredLength(request, maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      // Stops the upload; the answer goes out without waiting for (or keeping) the rest.
      void reader.cancel().catch(() => {});
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    body.set(c, at);
    at += c.byteLength;
  }
  return body;
}
