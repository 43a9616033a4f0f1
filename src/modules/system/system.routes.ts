/**
 * Operator endpoints outside the API prefix: liveness, readiness, Prometheus metrics and the offline docs
 * UI bundle. /metrics needs no key (like /healthz): it holds counts, never data; restrict it at the proxy.
 * NB! The Scalar bundle is embedded in the binary (`with { type: "file" }`): the appliance may have no
 * internet, and a CDN script would leave /docs blank.
 */
import { Elysia } from "elysia";
import scalarBundle from "../../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import type { Deps } from "../../deps";
import { VERSION } from "../../version";

export const systemRoutes = (deps: Deps) =>
  new Elysia()
    .get("/healthz", () => ({ status: "ok", version: VERSION }))
    .get("/readyz", ({ set }) => {
      try {
        deps.db.$client.query("SELECT 1").get();
        return { status: "ready" };
      } catch {
        set.status = 503;
        return { status: "unavailable" };
      }
    })
    .get("/metrics", () => {
      const jobs = Object.entries(deps.queue.stats()).flatMap(([type, counts]) =>
        Object.entries(counts).map(([status, value]) => ({ labels: { type, status }, value })),
      );
      const body = deps.metrics.render([
        { name: "switchboard_jobs", help: "Jobs in the durable queue by type and status (dead = retries exhausted).", samples: jobs },
        {
          name: "switchboard_channel_account_up",
          help: "1 when a channel account is active, 0 when auth_failed or error.",
          samples: deps.channels.all().map((r) => ({ labels: { account: r.account.id, channel: r.account.channel, provider: r.account.provider, status: r.status }, value: r.status === "active" ? 1 : 0 })),
        },
        { name: "switchboard_uptime_seconds", help: "Seconds since the process started.", samples: [{ value: Math.round((deps.now().getTime() - deps.startedAt.getTime()) / 1000) }] },
        { name: "process_resident_memory_bytes", help: "Resident memory of the process.", samples: [{ value: process.memoryUsage.rss() }] },
      ]);
      return new Response(body, { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
    })
    .get("/docs/scalar.js", () => new Response(Bun.file(scalarBundle), { headers: { "content-type": "application/javascript", "cache-control": "public, max-age=86400" } }));
