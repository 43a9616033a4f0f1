/**
 * Channel accounts at run time: validated from `[[channels]]` at start (unknown provider, a provider that
 * cannot serve the channel, bad settings, duplicate ids, two defaults for one non-email channel → the
 * process refuses to start, naming the entry), each with its adapter and a status.
 */
import { Value } from "@sinclair/typebox/value";
import type { Config } from "../config/config.schema";
import { ConfigError, pointerToKey } from "../config/config.load";
import { providerDefinition } from "./channel.registry";
import { CHANNEL_RULES } from "./channel.rules";
import type { AccountStatus, AdapterContext, ChannelAccount, ChannelAdapter, InboundEvent } from "./channel.types";

export interface AccountRuntime {
  account: ChannelAccount;
  adapter: ChannelAdapter;
  status: AccountStatus;
}

/** Validates `[[channels]]` and returns the accounts with provider defaults applied. Throws ConfigError. */
export function validateChannelAccounts(config: Config): ChannelAccount[] {
  const ids = new Set<string>();
  const defaults = new Map<string, number>();
  return config.channels.map((entry, i) => {
    const where = `channels[${i}] (${entry.name})`;
    const def = providerDefinition(entry.provider);
    if (!def) throw new ConfigError(`${where}: provider "${entry.provider}" is not available in this build`);
    if (!def.channels.includes(entry.channel))
      throw new ConfigError(`${where}: provider "${entry.provider}" cannot serve channel "${entry.channel}" (it serves ${def.channels.join(", ")})`);
    if (ids.has(entry.id)) throw new ConfigError(`${where}: id ${entry.id} is used by another [[channels]] entry`);
    ids.add(entry.id);
    const settings = Value.Default(def.settings, Value.Clone(entry.settings)) as Record<string, unknown>;
    if (!Value.Check(def.settings, settings)) {
      const err = [...Value.Errors(def.settings, settings)].sort((a, b) => b.path.length - a.path.length)[0]!;
      throw new ConfigError(
        `${where}: key "channels[${i}].settings.${pointerToKey(err.path)}" has value ${JSON.stringify(err.value) ?? "(missing)"}: ${err.message.toLowerCase()}`,
      );
    }
    if (entry.default && entry.channel !== "email") {
      const k = `${entry.company}/${entry.channel}`;
      if (defaults.has(k))
        throw new ConfigError(`${where}: company "${entry.company}" already has a default ${entry.channel} account (channels[${defaults.get(k)}])`);
      defaults.set(k, i);
    }
    // DESIGN §10 defaults: WhatsApp 80/s, other providers 20/s, sandbox unlimited; 0 turns the throttle off.
    const rate = entry.max_per_second ?? (entry.provider === "sandbox" ? 0 : CHANNEL_RULES[entry.channel].maxPerSecond);
    const chatHandle =
      (entry.chat_handle ?? (entry.channel === "messenger" && typeof settings.page_id === "string" ? settings.page_id : "")).replace(/^\+/, "") || null;
    return {
      id: entry.id,
      company: entry.company,
      channel: entry.channel,
      provider: entry.provider,
      name: entry.name,
      isDefault: entry.default,
      settings,
      maxPerSecond: rate > 0 ? rate : null,
      chatHandle,
    };
  });
}

export type InboundHandler = (account: ChannelAccount, events: InboundEvent[]) => Promise<void>;

export function createChannelRuntime({
  accounts,
  context,
}: {
  accounts: ChannelAccount[];
  /** Everything of the adapter context but the account and the inbound hand-over. */
  context: (account: ChannelAccount) => Omit<AdapterContext, "account" | "onInbound">;
}) {
  let inbound: InboundHandler = async () => {
    throw new Error("no inbound handler wired");
  };
  const byId = new Map<string, AccountRuntime>();
  const logs = new Map<string, AdapterContext["log"]>();
  for (const account of accounts) {
    const def = providerDefinition(account.provider)!;
    let adapter: ChannelAdapter;
    const ctx = context(account);
    logs.set(account.id, ctx.log);
    try {
      adapter = def.create({ ...ctx, account, onInbound: (events) => inbound(account, events) });
    } catch (e) {
      throw new ConfigError(`channels entry "${account.name}" (${account.id}): ${(e as Error).message}`);
    }
    byId.set(account.id, { account, adapter, status: "active" });
  }
  async function startOne(r: AccountRuntime, start: () => Promise<void> | undefined): Promise<void> {
    try {
      await start();
    } catch (e) {
      r.status = "error";
      logs.get(r.account.id)?.error({ err: e, accountId: r.account.id }, "channel account failed to start");
    }
  }
  return {
    /** The messaging module hands inbound events (webhooks, polling, sandbox timers) to one handler. */
    onInbound(handler: InboundHandler) {
      inbound = handler;
    },
    get(id: string): AccountRuntime | undefined {
      return byId.get(id);
    },
    forCompany(companySlug: string): AccountRuntime[] {
      return [...byId.values()].filter((r) => r.account.company === companySlug);
    },
    all(): AccountRuntime[] {
      return [...byId.values()];
    },
    setStatus(id: string, status: AccountStatus) {
      const r = byId.get(id);
      if (r) r.status = status;
    },
    /**
     * Starts every account's receivers. NB! One account that cannot start (a port in use, a provider down)
     * is marked `error` (GET /channels shows it) and logged; it never keeps the others, or the API, down.
     */
    async start() {
      for (const r of byId.values()) await startOne(r, () => r.adapter.start?.());
    },
    /** Starts the receivers one instance at a time may run (long polling, IMAP): when this one leads. */
    async startPolling() {
      for (const r of byId.values()) await startOne(r, () => r.adapter.startPolling?.());
    },
    async stopPolling() {
      await Promise.allSettled([...byId.values()].map((r) => r.adapter.stopPolling?.()));
    },
    async stop() {
      await Promise.allSettled([...byId.values()].map((r) => r.adapter.stop?.()));
    },
  };
}
export type ChannelRuntime = ReturnType<typeof createChannelRuntime>;
