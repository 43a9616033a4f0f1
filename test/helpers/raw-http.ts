/**
 * A raw HTTP/1.1 client over a TCP socket, for tests of how the server treats a request body it should
 * not read: it writes the body lazily (never holding it in memory, so the test process's RSS measures the
 * server), with `Content-Length` or chunked, and stops writing as soon as an answer arrives or the
 * connection closes. fetch() cannot do that: it sends the whole body before it looks at the answer.
 */
import { connect } from "node:net";

export interface RawAnswer {
  /** 0 when the connection closed without an answer. */
  status: number;
  body: string;
  /** Body bytes written before the answer (or the close) arrived. */
  sent: number;
  ms: number;
}

export function rawPost(opts: {
  port: number;
  path: string;
  headers?: Record<string, string>;
  /** Body size to offer; written in `chunk`-sized pieces of "x". */
  bytes: number;
  /** true: `Transfer-Encoding: chunked` without a Content-Length; false: `Content-Length: bytes`. */
  chunked: boolean;
  chunk?: number;
}): Promise<RawAnswer> {
  const piece = Buffer.alloc(opts.chunk ?? 64 * 1024, "x");
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const socket = connect(opts.port, "127.0.0.1");
    let sent = 0;
    let answer = "";
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      const bodyAt = answer.indexOf("\r\n\r\n");
      socket.destroy();
      resolve({ status: m ? Number(m[1]) : 0, body: bodyAt >= 0 ? answer.slice(bodyAt + 4) : "", sent, ms: performance.now() - started });
    };
    const write = () => {
      while (!done && sent < opts.bytes) {
        const n = Math.min(piece.length, opts.bytes - sent);
        const data = n === piece.length ? piece : piece.subarray(0, n);
        sent += n;
        const ok = socket.write(opts.chunked ? Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), data, Buffer.from("\r\n")]) : data);
        if (!ok) return void socket.once("drain", write);
      }
      if (!done && opts.chunked) socket.write("0\r\n\r\n");
    };
    socket.on("connect", () => {
      const head = [
        `POST ${opts.path} HTTP/1.1`,
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        opts.chunked ? "Transfer-Encoding: chunked" : `Content-Length: ${opts.bytes}`,
      ];
      for (const [k, v] of Object.entries(opts.headers ?? {})) head.push(`${k}: ${v}`);
      socket.write(head.join("\r\n") + "\r\n\r\n");
      write();
    });
    socket.on("data", (d) => {
      answer += d.toString("latin1");
      // The head and a Content-Length body (our error answers are small) have arrived.
      const end = answer.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(answer);
      if (end >= 0 && (!length || answer.length - end - 4 >= Number(length[1]))) finish();
    });
    socket.on("close", finish);
    socket.on("error", (e) => (answer ? finish() : done ? undefined : sent ? finish() : reject(e)));
  });
}
