/**
 * Which endpoints of a company want which event types, kept in memory so the fan-out inside every
 * emitting transaction costs no query. Loaded per company on first use; every endpoint write invalidates
 * its company (and the routes invalidate again after their transaction ends, so a rolled-back write can
 * never leave a stale entry behind).
 */
import type { WebhooksRepository } from "./webhooks.repository";
import { compileMatcher } from "./webhooks.subscriptions";

interface CachedEndpoint {
  id: string;
  matches: (type: string) => boolean;
}

export type SubscriptionCache = ReturnType<typeof createSubscriptionCache>;

export function createSubscriptionCache(repo: WebhooksRepository) {
  const byCompany = new Map<string, CachedEndpoint[]>();
  const versions = new Map<string, number>(); // invalidations per company

  /** A company's endpoints: from memory when loaded (no promise: the fan-out runs in every emitting unit), else loaded. */
  function load(companyId: string): CachedEndpoint[] | Promise<CachedEndpoint[]> {
    const entry = byCompany.get(companyId);
    if (entry) return entry;
    const version = versions.get(companyId) ?? 0;
    return repo.subscriptionsOf(companyId).then((rows) => {
      const loaded = rows.filter((e) => e.enabled).map((e) => ({ id: e.id, matches: compileMatcher(e.events) }));
      // Not kept when an endpoint write invalidated the company while it loaded (it may predate that write).
      if ((versions.get(companyId) ?? 0) === version) byCompany.set(companyId, loaded);
      return loaded;
    });
  }
  const select = (endpoints: CachedEndpoint[], type: string) => {
    const out: string[] = [];
    for (const e of endpoints) if (e.matches(type)) out.push(e.id);
    return out;
  };

  return {
    /** Ids of the enabled endpoints subscribed to `type`: at once when the company's endpoints are in memory. */
    matching(companyId: string, type: string): string[] | Promise<string[]> {
      const endpoints = load(companyId);
      return Array.isArray(endpoints) ? select(endpoints, type) : endpoints.then((e) => select(e, type));
    },
    invalidate(companyId: string): void {
      byCompany.delete(companyId);
      versions.set(companyId, (versions.get(companyId) ?? 0) + 1);
    },
  };
}
