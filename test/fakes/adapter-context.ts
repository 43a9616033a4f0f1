/**
 * A hand-made AdapterContext for adapter tests and end-to-end helpers: in-memory state store, a
 * controllable clock, the real `fetch` (adapters talk to loopback fakes), and every `onInbound` batch
 * recorded. No production code knows about it.
 */
import type { AdapterContext, Channel, ChannelAccount, InboundEvent, ProviderName } from "../../src/channels/channel.types";
import { createGuardedFetch } from "../../src/platform/outbound/outbound.fetch";
import { createOutboundPolicy, DEFAULT_OUTBOUND, type OutboundConfig } from "../../src/platform/outbound/outbound.policy";

/** `[outbound] allow = ["127.0.0.0/8"]`: what tests that serve media from a loopback listener need. */
export const LOOPBACK_MEDIA: Partial<OutboundConfig> = { allow: ["127.0.0.0/8"] };

export interface TestContext {
  ctx: AdapterContext;
  /** Every batch handed to ctx.onInbound, in order. */
  inbound: InboundEvent[][];
  /** The state store's backing map (inspect or pre-seed it). */
  state: Map<string, string>;
  /** Move the fake clock. */
  setNow(date: Date): void;
  logs: { level: string; o: object; m?: string }[];
}

export function createTestContext(opts: {
  provider: ProviderName;
  channel: Channel;
  settings: Record<string, unknown>;
  accountId?: string;
  now?: Date;
  publicUrl?: string;
  state?: Map<string, string>;
  /** Replaces the default recorder; the recorder still records before calling it. */
  onInbound?: (events: InboundEvent[]) => Promise<void>;
  fetch?: typeof fetch;
  requestTimeoutMs?: number;
  /** `[outbound]` of the guarded fetcher (`ctx.fetchUrl`); default: the product's (loopback refused). */
  outbound?: Partial<OutboundConfig>;
}): TestContext {
  let now = opts.now ?? new Date();
  const inbound: InboundEvent[][] = [];
  const state = opts.state ?? new Map<string, string>();
  const logs: TestContext["logs"] = [];
  const account: ChannelAccount = {
    id: opts.accountId ?? "0190f0f0-0000-7000-8000-000000000001",
    company: "default",
    channel: opts.channel,
    provider: opts.provider,
    name: `${opts.provider} (test)`,
    isDefault: true,
    maxPerSecond: null,
    chatHandle: null,
    settings: opts.settings,
  };
  const log = (level: string) => (o: object, m?: string) => {
    logs.push({ level, o, m });
  };
  const ctx: AdapterContext = {
    account,
    fetch: opts.fetch ?? fetch,
    fetchUrl: createGuardedFetch({
      policy: createOutboundPolicy({ ...DEFAULT_OUTBOUND, ...opts.outbound }),
      fetch: opts.fetch ?? fetch,
      timeoutMs: opts.requestTimeoutMs ?? 15_000,
    }),
    requestTimeoutMs: opts.requestTimeoutMs ?? 15_000,
    now: () => now,
    log: { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") },
    publicUrl: opts.publicUrl ?? "http://localhost:8080",
    dataDir: "/tmp",
    state: { read: async (k) => state.get(k), write: async (k, v) => void state.set(k, v) },
    onInbound: async (events) => {
      inbound.push(events);
      if (opts.onInbound) await opts.onInbound(events);
    },
  };
  return { ctx, inbound, state, setNow: (d) => void (now = d), logs };
}
