/**
 * createApp(deps): the HTTP surface. Platform plugins first (request id, errors, access log, API guard),
 * then each module's routes under /api/public/v1. No listen() here — `serve` and tests decide.
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
import { billingRoutes } from "./modules/billing/billing.routes";
import { campaignsRoutes } from "./modules/campaigns/campaigns.routes";
import { contactsRoutes } from "./modules/contacts/contacts.routes";
import { tagsRoutes } from "./modules/contacts/tags.routes";
import { mediaRoutes } from "./modules/media/media.routes";
import { meRoutes } from "./modules/me/me.routes";
import { messagesRoutes } from "./modules/messages/messages.routes";
import { conversationsRoutes } from "./modules/conversations/conversations.routes";
import { templatesRoutes } from "./modules/templates/templates.routes";
import { channelsRoutes } from "./modules/channels-api/channels.routes";
import { hooksRoutes } from "./modules/inbound/hooks.routes";
import { systemRoutes } from "./modules/system/system.routes";
import { webhooksRoutes } from "./modules/webhooks/webhooks.routes";
import { pipelineRoutes } from "./modules/pipeline/pipeline.routes";
import { sourcesRoutes } from "./modules/sources/sources.routes";
import { segmentsRoutes } from "./modules/segments/segments.routes";
import { socialPublicRoutes, socialRoutes } from "./modules/social/social.routes";
import { consoleRoutes } from "./console/console.routes";
import { unsubscribeRoutes } from "./modules/unsubscribe/unsubscribe.routes";
import { VERSION } from "./version";
import { EVENT_TYPES } from "./events";

export function createApp(deps: Deps) {
  const api = new Elysia({ prefix: API_PREFIX })
    .use(deps.guard)
    .use(meRoutes(deps))
    .use(billingRoutes(deps))
    .use(contactsRoutes(deps))
    .use(tagsRoutes(deps))
    .use(webhooksRoutes(deps))
    .use(messagesRoutes(deps))
    .use(conversationsRoutes(deps))
    .use(templatesRoutes(deps))
    .use(channelsRoutes(deps))
    .use(socialRoutes(deps))
    .use(mediaRoutes(deps))
    .use(campaignsRoutes(deps))
    .use(pipelineRoutes(deps))
    .use(sourcesRoutes(deps))
    .use(segmentsRoutes(deps));

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
    .use(systemRoutes(deps))
    .use(hooksRoutes(deps))
    .use(socialPublicRoutes(deps))
    .use(unsubscribeRoutes(deps))
    .use(consoleRoutes())
    .use(api);
}

export type App = ReturnType<typeof createApp>;
