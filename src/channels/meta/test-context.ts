/**
 * Test helper: a hand-made AdapterContext for constructing adapters directly in adapter tests.
 * Imported by *.test.ts files only.
 */
import type { AdapterContext, Channel, InboundEvent, ProviderName } from "../channel.types";

export interface TestContext {
  ctx: AdapterContext;
  logs: { level: string; obj: object; msg?: string }[];
  state: Map<string, string>;
  inbound: InboundEvent[];
}

export function makeTestContext({
  provider,
  channel,
  settings,
  now = () => new Date("2025-01-15T12:00:00.000Z"),
  fetchImpl = fetch,
}: {
  provider: ProviderName;
  channel: Channel;
  settings: Record<string, unknown>;
  now?: () => Date;
  fetchImpl?: typeof fetch;
}): TestContext {
  const logs: TestContext["logs"] = [];
  const state = new Map<string, string>();
  const inbound: InboundEvent[] = [];
  const logAt = (level: string) => (obj: object, msg?: string) => void logs.push({ level, obj, msg });
  const ctx: AdapterContext = {
    account: { id: `acc-${provider}`, company: "default", channel, provider, name: `${provider} test`, isDefault: true, settings },
    fetch: fetchImpl,
    now,
    log: { debug: logAt("debug"), info: logAt("info"), warn: logAt("warn"), error: logAt("error") },
    publicUrl: "http://127.0.0.1:0",
    dataDir: "/tmp",
    state: { get: (key) => state.get(key), set: (key, value) => void state.set(key, value) },
    onInbound: async (events) => void inbound.push(...events),
  };
  return { ctx, logs, state, inbound };
}

/** A WebhookRequest as the /hooks route would build it. */
export function webhookRequest({ method = "POST", url = "http://127.0.0.1/hooks/acc", headers = {}, body = "" }: { method?: string; url?: string; headers?: Record<string, string>; body?: string | Uint8Array }) {
  return {
    method,
    url: new URL(url),
    headers: new Headers(headers),
    rawBody: typeof body === "string" ? new TextEncoder().encode(body) : body,
  };
}
