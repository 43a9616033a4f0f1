/**
 * Social accounts at run time: validated from `[[social_accounts]]` at start (unknown provider, a provider
 * that cannot serve the platform, bad settings, duplicate ids → the process refuses to start, naming the
 * entry), each with its publisher and a status (`connected` until the platform refuses our credentials).
 */
import type { Config } from "../../config/config.schema";
import { ConfigError } from "../../config/config.load";
import { publisherDefinition } from "../../social-publishers/publisher.registry";
import type { PublisherContext, SocialAccount, SocialPlatform, SocialProvider, SocialPublisher } from "../../social-publishers/publisher.types";

export type SocialAccountStatus = "connected" | "error";

export interface SocialAccountRuntime {
  account: SocialAccount;
  publisher: SocialPublisher;
  status: SocialAccountStatus;
  handle: string | null;
  /** Why the status is `error`. */
  lastError: string | null;
}

/** Validates `[[social_accounts]]`; returns the accounts with provider defaults applied. Throws ConfigError. */
export function validateSocialAccounts(config: Config): SocialAccount[] {
  const ids = new Set<string>();
  return config.social_accounts.map((entry, i) => {
    const where = `social_accounts[${i}]${entry.name ? ` (${entry.name})` : ""}`;
    const def = publisherDefinition(entry.provider);
    if (!def)
      throw new ConfigError(
        `${where}: key "social_accounts[${i}].provider" has value ${JSON.stringify(entry.provider)}: expected one of "sandbox", "instagram", "facebook", "x", "tiktok"`,
      );
    if (!def.platforms.includes(entry.platform))
      throw new ConfigError(`${where}: provider "${entry.provider}" cannot publish to platform "${entry.platform}" (it serves ${def.platforms.join(", ")})`);
    if (ids.has(entry.id)) throw new ConfigError(`${where}: id ${entry.id} is used by another [[social_accounts]] entry`);
    ids.add(entry.id);
    let settings: Record<string, unknown>;
    try {
      settings = def.readSettings(entry.settings);
    } catch (e) {
      throw new ConfigError(`${where}: ${(e as Error).message.replace('key "settings.', `key "social_accounts[${i}].settings.`)}`);
    }
    return {
      id: entry.id,
      company: entry.company,
      platform: entry.platform as SocialPlatform,
      provider: entry.provider as SocialProvider,
      name: entry.name || `${entry.platform} (${entry.provider})`,
      settings,
    };
  });
}

export function createSocialRuntime({
  accounts,
  context,
}: {
  accounts: SocialAccount[];
  context: (account: SocialAccount) => Omit<PublisherContext, "account">;
}) {
  const byId = new Map<string, SocialAccountRuntime>();
  for (const account of accounts) {
    const publisher = publisherDefinition(account.provider)!.create({ ...context(account), account });
    const handle = typeof account.settings.handle === "string" ? account.settings.handle : null;
    byId.set(account.id, { account, publisher, status: "connected", handle, lastError: null });
  }
  return {
    get: (id: string) => byId.get(id),
    forCompany: (slug: string) => [...byId.values()].filter((r) => r.account.company === slug),
    all: () => [...byId.values()],
    /** The platform refused our credentials (error) or answered again (connected). */
    setStatus(id: string, status: SocialAccountStatus, lastError: string | null = null) {
      const r = byId.get(id);
      if (r) {
        r.status = status;
        r.lastError = lastError;
      }
    },
    setHandle(id: string, handle: string | null) {
      const r = byId.get(id);
      if (r && handle) r.handle = handle;
    },
  };
}
export type SocialRuntime = ReturnType<typeof createSocialRuntime>;
