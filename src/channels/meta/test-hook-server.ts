/**
 * Test helper (imported by *.test.ts only): a loopback stand-in for the /hooks route that hands the raw
 * request to an adapter's handleWebhook, answers what the adapter says, and records the events — so the
 * Graph fake can push real signed HTTP webhooks at an adapter.
 */
import type { ChannelAdapter, InboundEvent, WebhookResult } from "../channel.types";

export interface TestHookServer {
  url: string;
  /** Every handleWebhook result, in order. */
  results: WebhookResult[];
  events(): InboundEvent[];
  stop(): void;
}

export function serveAdapterHooks(adapter: ChannelAdapter): TestHookServer {
  const results: WebhookResult[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const result = await adapter.handleWebhook({
        method: req.method,
        url: new URL(req.url),
        headers: req.headers,
        rawBody: new Uint8Array(await req.arrayBuffer()),
      });
      results.push(result);
      return new Response(result.response.body ?? "", { status: result.response.status, headers: result.response.headers });
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/hooks/test-account`,
    results,
    events: () => results.flatMap((r) => r.events),
    stop: () => server.stop(true),
  };
}
