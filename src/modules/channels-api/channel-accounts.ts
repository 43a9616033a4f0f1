/**
 * A company's channel accounts (the configured AccountRuntimes), default first: what sends, templates,
 * campaigns, sources, segments and GET /channels pick accounts from.
 */
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { ChannelAccountsNeeds } from "./channels.needs";
import { getCompany } from "../companies/companies.service";

/** The company's slug, read once (a company's slug never changes), then cached. */
const slugs = new Map<string, string>();

/** Per channel registry: the lists accountsOf built (the configured accounts do not change while it runs). */
const accountLists = new WeakMap<ChannelAccountsNeeds["channels"], Map<string, readonly AccountRuntime[]>>();

function listOf(deps: ChannelAccountsNeeds, slug: string, companyId: string, channel?: string): readonly AccountRuntime[] {
  let lists = accountLists.get(deps.channels);
  if (!lists) accountLists.set(deps.channels, (lists = new Map()));
  const key = `${companyId}\u0000${channel ?? ""}`;
  let list = lists.get(key);
  if (!list) {
    const all = deps.channels.forCompany(slug).filter((r) => !channel || r.account.channel === channel);
    list = Object.freeze(all.sort((a, b) => Number(b.account.isDefault) - Number(a.account.isDefault)));
    lists.set(key, list);
  }
  return list;
}

/** Accounts of a company on a channel, default first (the company's slug is read once, then cached). */
export async function accountsOf(deps: ChannelAccountsNeeds, companyId: string, channel?: string): Promise<readonly AccountRuntime[]> {
  let slug = slugs.get(companyId);
  if (!slug) slugs.set(companyId, (slug = (await getCompany({ db: deps.db, id: companyId })).slug));
  return listOf(deps, slug, companyId, channel);
}
