/**
 * Operator endpoints outside the API prefix: liveness, readiness, Prometheus metrics and the offline docs
 * UI bundle. /metrics takes no API key but the bearer token of `[metrics] token` (`init` generates one): it
 * is the operator's view of every company (balances, channel account ids). NB! Without a token it answers
 * 401 to everyone — also on loopback, where a reverse proxy on the same host would make every caller look
 * local — so an upgraded config without a token fails closed; `doctor` says so.
 * NB! The Scalar bundle is embedded in the binary (`with { type: "file" }`): the appliance may have no
 * internet, and a CDN script would leave /docs blank.
 */
import { Elysia } from "elysia";
import scalarBundle from "../../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import { createHash, timingSafeEqual } from "node:crypto";
import { databaseBytes } from "../../db/size";
import { databasePath } from "../../config/config.schema";
import { listCompanies } from "../companies/companies.service";
import { ASSET_CSP } from "../../platform/http/docs-csp";
import { VERSION } from "../../version";
import type { SystemNeeds } from "./system.needs";
import { createSystemStore } from "./system.repository";

/** Constant-time comparison (digests first: equal lengths, nothing learnt from timing). */
const sameSecret = (a: string, b: string) => timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());

/** How long /readyz waits for the database's answer. */
const READY_WITHIN_MS = 2000;

export const systemRoutes = (deps: SystemNeeds) => {
  const store = createSystemStore(deps.db);
  return new Elysia()
    .get("/healthz", () => ({ status: "ok", version: VERSION }))
    .get("/readyz", async ({ set }) => {
      try {
        // A database that has not answered within READY_WITHIN_MS is not ready: the probe answers 503 then, not
        // after the pool's deadlines (a black-holed PostgreSQL; a load balancer's check has its own timeout).
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("no answer")), READY_WITHIN_MS)));
        await Promise.race([store.ping(), late]).finally(() => clearTimeout(timer));
        return { status: "ready" };
      } catch {
        set.status = 503;
        return { status: "unavailable" };
      }
    })
    .get("/metrics", async ({ headers }) => {
      const token = deps.config.metrics.token;
      if (!token || !sameSecret(headers.authorization ?? "", `Bearer ${token}`))
        return new Response(
          token
            ? "metrics need Authorization: Bearer <[metrics] token>\n"
            : "metrics are off: set [metrics] token in the config, then send Authorization: Bearer <token>\n",
          {
            status: 401,
            headers: { "www-authenticate": 'Bearer realm="metrics"' },
          },
        );
      const jobs = Object.entries(await deps.queue.stats()).flatMap(([type, counts]) =>
        Object.entries(counts).map(([status, value]) => ({ labels: { type, status }, value })),
      );
      const companies = await listCompanies({ db: deps.db });
      const balances: number[] = [];
      for (const c of companies) balances.push(await deps.ledger.balance(c.id));
      const slugOf = new Map(companies.map((c) => [c.id, c.slug]));
      const bytes = await databaseBytes({ db: deps.db, file: databasePath(deps.config) });
      const body = deps.metrics.render([
        { name: "switchboard_jobs", help: "Jobs in the durable queue by type and status (dead = retries exhausted).", samples: jobs },
        {
          name: "switchboard_jobs_oldest_due_age_seconds",
          help: "Per job type, how long the oldest due pending job has waited (a growing value: the loop is behind).",
          samples: Object.entries(await deps.queue.oldestDueAgeMs()).map(([type, ms]) => ({ labels: { type }, value: Math.max(0, ms) / 1000 })),
        },
        {
          name: "switchboard_campaign_recipients",
          help: "Recipients of scheduled, running and paused campaigns by status (matched = the audience).",
          samples: (await deps.campaigns.activeProgress()).flatMap((c) =>
            Object.entries(c.counts).map(([status, value]) => ({
              labels: { campaign: c.id, company: slugOf.get(c.companyId) ?? c.companyId, campaign_status: c.status, status },
              value,
            })),
          ),
        },
        {
          name: "switchboard_company_balance",
          help: "Balance per company in the billing currency (priced sends are refused at 0).",
          samples: companies.map((c, i) => ({
            labels: { company: c.slug, currency: deps.config.billing.currency },
            value: balances[i]! / 1_000_000,
          })),
        },
        {
          name: "switchboard_database_bytes",
          help: "Size of the database: the SQLite file (db) and its write-ahead log (wal); on PostgreSQL the database (db; the WAL belongs to the server).",
          samples: [{ labels: { file: "db" }, value: bytes.db }, ...(bytes.wal === undefined ? [] : [{ labels: { file: "wal" }, value: bytes.wal }])],
        },
        {
          name: "switchboard_channel_account_up",
          help: "1 when a channel account is active, 0 when auth_failed or error.",
          samples: deps.channels.all().map((r) => ({
            labels: { account: r.account.id, channel: r.account.channel, provider: r.account.provider, status: r.status },
            value: r.status === "active" ? 1 : 0,
          })),
        },
        {
          name: "switchboard_uptime_seconds",
          help: "Seconds since the process started.",
          samples: [{ value: Math.round((deps.now().getTime() - deps.startedAt.getTime()) / 1000) }],
        },
        { name: "process_resident_memory_bytes", help: "Resident memory of the process.", samples: [{ value: process.memoryUsage.rss() }] },
      ]);
      return new Response(body, { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
    })
    .get(
      "/docs/scalar.js",
      () =>
        new Response(Bun.file(scalarBundle), {
          headers: { "content-type": "application/javascript", "cache-control": "public, max-age=86400", "content-security-policy": ASSET_CSP },
        }),
    );
};
