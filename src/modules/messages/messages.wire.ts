/**
 * Background wiring of messaging: the dispatch job, the inbound hand-over from every adapter, the
 * sandbox `hello_world` templates, and provider template sync (on start and every 30 minutes).
 */
import type { Deps } from "../../deps";
import { findCompanyBySlug } from "../companies/companies.service";
import { ensureHelloWorld, storeSyncedTemplates } from "../templates/templates.service";
import { processInbound } from "./messages.inbound";
import { BULK_DISPATCH_JOB, DISPATCH_JOB, dispatchMessage } from "./messages.service";

export function wireMessaging(deps: Deps): void {
  deps.queue.register<{ messageId: string }>(DISPATCH_JOB, { handle: (job) => dispatchMessage(deps, job) });
  deps.queue.register<{ messageId: string }>(BULK_DISPATCH_JOB, { handle: (job) => dispatchMessage(deps, job) });
  deps.channels.onInbound((account, events) => processInbound(deps, account, events));
  seedSandboxTemplates(deps);
  deps.scheduler.every("templates-sync", "0 */30 * * * *", () => syncAllTemplates(deps));
}

export function seedSandboxTemplates(deps: Deps): void {
  for (const r of deps.channels.all()) {
    if (r.account.provider !== "sandbox") continue;
    const company = findCompanyBySlug({ db: deps.db, slug: r.account.company });
    if (company) ensureHelloWorld({ db: deps.db, now: deps.now, companyId: company.id, account: r.account });
  }
}

/** Syncs provider templates of every account that has them; returns counts per account. Never throws. */
export async function syncAllTemplates(deps: Deps): Promise<{ accountId: string; synced?: number; error?: string }[]> {
  const out: { accountId: string; synced?: number; error?: string }[] = [];
  for (const r of deps.channels.all()) {
    if (!r.adapter.syncTemplates) continue;
    const company = findCompanyBySlug({ db: deps.db, slug: r.account.company });
    if (!company) continue;
    try {
      const list = await r.adapter.syncTemplates();
      out.push({ accountId: r.account.id, synced: storeSyncedTemplates({ db: deps.db, now: deps.now, companyId: company.id, account: r.account, list }) });
    } catch (e) {
      const status = (e as { failure?: { accountStatus?: "auth_failed" | "error" } }).failure?.accountStatus;
      if (status) deps.channels.setStatus(r.account.id, status);
      deps.log.warn({ err: e, accountId: r.account.id }, "template sync failed");
      out.push({ accountId: r.account.id, error: (e as Error).message });
    }
  }
  return out;
}
