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
  // A load in flight per company, shared by the misses that come while it runs: rows emitted in a burst (an
  // import's held rows answer without a round trip) otherwise each started a query of their own before the
  // first one answered (hundreds a transaction on PostgreSQL).
  const loading = new Map<string, Promise<CachedEndpoint[]>>();

  /** A company's endpoints: from memory when loaded (no promise: the fan-out runs in every emitting unit), else loaded. */
  function load(companyId: string): CachedEndpoint[] | Promise<CachedEndpoint[]> {
    const entry = byCompany.get(companyId);
    if (entry) return entry;
    const inFlight = loading.get(companyId);
    // NB! It runs in the unit that began it (PostgreSQL: on that unit's connection): if it fails there (that
    // unit's transaction failed), the others load for themselves.
    if (inFlight) return inFlight.catch(() => load(companyId));
    const version = versions.get(companyId) ?? 0;
    const pending = repo.subscriptionsOf(companyId).then(
      (rows) => {
        const loaded = rows.filter((e) => e.enabled).map((e) => ({ id: e.id, matches: compileMatcher(e.events) }));
        // Not kept when an endpoint write invalidated the company while it loaded (it may predate that write).
        if ((versions.get(companyId) ?? 0) === version) byCompany.set(companyId, loaded);
        if (loading.get(companyId) === pending) loading.delete(companyId);
        return loaded;
      },
      (e) => {
        if (loading.get(companyId) === pending) loading.delete(companyId);
        throw e;
      },
    );
    loading.set(companyId, pending);
    return pending;
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
      loading.delete(companyId); // (a load begun before this write may not see it: the next miss loads anew)
      versions.set(companyId, (versions.get(companyId) ?? 0) + 1);
    },
  };
}
