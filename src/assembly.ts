/**
 * buildModules(deps): every module of one app, each built once by its factory (`modules/<m>/<m>.module.ts`)
 * from what it names in its needs type — `Deps` satisfies each — and handed what it takes of another module
 * (the campaigns service to the system routes, the unsubscribe links to the messages dispatch). createApp mounts
 * their routes, wireModules/startModules/stopModules run their wiring.
 */
import type { Deps } from "./deps";
import { createBillingModule } from "./modules/billing/billing.module";
import { createCampaignsModule } from "./modules/campaigns/campaigns.module";
import { createChannelsModule } from "./modules/channels-api/channels.module";
import { createContactsModule } from "./modules/contacts/contacts.module";
import { createConversationsModule } from "./modules/conversations/conversations.module";
import { createInboundModule } from "./modules/inbound/inbound.module";
import { createMeModule } from "./modules/me/me.module";
import { createMediaModule } from "./modules/media/media.module";
import { createMessagesModule } from "./modules/messages/messages.module";
import { createPipelineModule } from "./modules/pipeline/pipeline.module";
import { createSegmentsModule } from "./modules/segments/segments.module";
import { createSocialModule } from "./modules/social/social.module";
import { createSourcesModule } from "./modules/sources/sources.module";
import { createSystemModule } from "./modules/system/system.module";
import { createTemplatesModule } from "./modules/templates/templates.module";
import { createUnsubscribeModule } from "./modules/unsubscribe/unsubscribe.module";
import { createWebhooksModule } from "./modules/webhooks/webhooks.module";

export function buildModules(deps: Deps) {
  const campaigns = createCampaignsModule(deps);
  const unsubscribe = createUnsubscribeModule(deps);
  return {
    me: createMeModule(deps),
    billing: createBillingModule(deps),
    contacts: createContactsModule(deps),
    webhooks: createWebhooksModule(deps),
    messages: createMessagesModule({ ...deps, unsubscribeLinks: unsubscribe.service.load }),
    conversations: createConversationsModule(deps),
    templates: createTemplatesModule(deps),
    channels: createChannelsModule(deps),
    social: createSocialModule(deps),
    media: createMediaModule(deps),
    campaigns,
    pipeline: createPipelineModule(deps),
    sources: createSourcesModule(deps),
    segments: createSegmentsModule(deps),
    system: createSystemModule({ ...deps, campaigns: campaigns.service }),
    inbound: createInboundModule(deps),
    unsubscribe,
  };
}

export type Modules = ReturnType<typeof buildModules>;

/**
 * NB! The one place module instances are kept: `serve` and the test harness call createApp(deps) and
 * wireModules(deps) separately, and both must reach the same instances (the webhooks' subscription cache, the
 * campaigns' store and engine, the social engine, the unsubscribe secret). It replaces the per-module WeakMaps
 * (campaignsFor, webhooksFor, socialFor, unsubscribeFor) that each module kept before. Caches of data keyed by
 * a Db (companies, templates, reports, …) are not module instances and stay in their modules.
 */
const built = new WeakMap<Deps, Modules>();

/** This app's modules, built on first use. */
export function modulesOf(deps: Deps): Modules {
  let m = built.get(deps);
  if (!m) built.set(deps, (m = buildModules(deps)));
  return m;
}
