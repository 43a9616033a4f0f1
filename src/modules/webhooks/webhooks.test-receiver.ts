/**
 * Test helper: a real HTTP receiver on 127.0.0.1 that records every request and answers with whatever
 * `respond` returns (default 200). Used by the webhooks tests and the benchmark.
 */
import { setSystemTime } from "bun:test";
import { Webhook } from "standardwebhooks";

export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

export function startReceiver(respond: (r: Received) => Response | Promise<Response> = () => new Response("ok")) {
  const received: Received[] = [];
  let handler = respond;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const headers = Object.fromEntries(req.headers.entries());
      const r: Received = {
        id: headers["webhook-id"] ?? "",
        timestamp: headers["webhook-timestamp"] ?? "",
        signature: headers["webhook-signature"] ?? "",
        headers,
        body: await req.text(),
        receivedAt: Date.now(),
      };
      received.push(r);
      return handler(r);
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hook`,
    port: server.port,
    received,
    /** Change the behaviour from now on. */
    respondWith(fn: (r: Received) => Response | Promise<Response>) {
      handler = fn;
    },
    /** Event types in arrival order. */
    types: () => received.map((r) => (JSON.parse(r.body) as { type: string }).type),
    stop: () => server.stop(true),
  };
}

/**
 * Verifies a received request with the `standardwebhooks` library, unchanged. The library checks the
 * timestamp against Date.now(); tests run on a manual clock, so Date is set to `at` for the check.
 */
export function verifyWithLibrary(secret: string, r: Received, at: Date): unknown {
  setSystemTime(at);
  try {
    return new Webhook(secret).verify(r.body, { "webhook-id": r.id, "webhook-timestamp": r.timestamp, "webhook-signature": r.signature });
  } finally {
    setSystemTime();
  }
}
