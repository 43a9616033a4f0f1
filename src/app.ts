/**
 * createApp(deps): the HTTP surface. Platform plugins first (request id, errors, access log, API guard),
 * then each module's routes under /api/public/v1 (the modules of src/assembly.ts, the same instances
 * wireModules wires). No listen() here — `serve` and tests decide.
 */
import { Elysia } from "elysia";
import type { Deps } from "./deps";
import { accessLogPlugin } from "./platform/http/access-log.plugin";
import { API_PREFIX } from "./platform/http/api-guard.plugin";
import { durableReadsPlugin } from "./platform/http/durable-reads.plugin";
import { errorPlugin } from "./platform/http/error.plugin";
import { openapiPlugin } from "./platform/http/openapi";
import { SANDBOX_HOOK_PATH } from "./modules/inbound/sandbox-hook.openapi";
import { requestIdPlugin } from "./platform/http/request-id.plugin";
import { routingPlugin } from "./platform/http/routing.plugin";
import { SECURITY_HEADERS } from "./platform/http/security-headers";
import { consoleRoutes } from "./console/console.routes";
import { VERSION } from "./version";
import { EVENT_TYPES } from "./events";
import { modulesOf } from "./assembly";

export function createApp(deps: Deps) {
  const m = modulesOf(deps);
  const api = new Elysia({ prefix: API_PREFIX })
    .use(deps.guard)
    .use(m.me.routes)
    .use(m.billing.routes)
    .use(m.contacts.routes)
    .use(m.webhooks.routes)
    .use(m.messages.routes)
    .use(m.conversations.routes)
    .use(m.templates.routes)
    .use(m.channels.routes)
    .use(m.social.routes)
    .use(m.media.routes)
    .use(m.campaigns.routes)
    .use(m.pipeline.routes)
    .use(m.sources.routes)
    .use(m.segments.routes);

  return new Elysia()
    .headers(SECURITY_HEADERS)
    .use(requestIdPlugin)
    .use(errorPlugin({ log: deps.log }))
    .use(accessLogPlugin({ log: deps.log, metrics: deps.metrics }))
    .use(routingPlugin())
    .use(durableReadsPlugin(deps.db))
    .use(
      openapiPlugin({
        title: "Switchboard API",
        version: VERSION,
        description: "On-premises omnichannel messaging: messages, contacts, conversations, campaigns, social posts, pipeline, webhooks. Guide: /docs/guide.",
        serverUrl: deps.config.server.public_url,
        exclude: ["/docs", "/docs/scalar.js", "/docs/guide", "/healthz", "/readyz", "/metrics"],
        extraPaths: SANDBOX_HOOK_PATH,
        eventTypes: EVENT_TYPES,
      }),
    )
    .use(m.system.routes)
    .use(m.inbound.routes)
    .use(m.social.publicRoutes)
    .use(m.unsubscribe.routes)
    .use(consoleRoutes())
    .use(api);
}

export type App = ReturnType<typeof createApp>;
