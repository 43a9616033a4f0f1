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

  /** NB! Synchronous (subscriptionsOfSync): the event subscriber is synchronous (webhooks.delivery.ts onEvent: see there). */
  function load(companyId: string): CachedEndpoint[] {
    let entry = byCompany.get(companyId);
    if (!entry) {
      entry = repo
        .subscriptionsOfSync(companyId)
        .filter((e) => e.enabled)
        .map((e) => ({ id: e.id, matches: compileMatcher(e.events) }));
      byCompany.set(companyId, entry);
    }
    return entry;
  }

  return {
    /** Ids of the enabled endpoints subscribed to `type`. */
    matching(companyId: string, type: string): string[] {
      const out: string[] = [];
      for (const e of load(companyId)) if (e.matches(type)) out.push(e.id);
      return out;
    },
    invalidate(companyId: string): void {
      byCompany.delete(companyId);
    },
  };
}
