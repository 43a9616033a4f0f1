/**
 * The social module's parts — repository, service, publishing engine, analytics, media links — built once per
 * app from exactly what each part uses (social.module.ts composes them with its routes and wiring).
 */
import type { SocialNeeds } from "./social.needs";
import { findCompanyBySlug, getCompany } from "../companies/companies.service";
import { findStoredMedia, holdMediaForUse } from "../media/media.service";
import { createAdapterStateStore } from "../../channels/adapter-state";
import { createAnalytics } from "./social.analytics";
import { createMediaLinks, isPublicUrl } from "./social.media-links";
import { createPublishEngine } from "./social.publish";
import { createSocialRepository } from "./social.repository";
import { createSocialService } from "./social.service";

export type Social = ReturnType<typeof buildSocial>;

export function buildSocial(deps: SocialNeeds) {
  const { db, now, log, social: runtime } = deps;
  const repo = createSocialRepository(db);
  // The signing secret lives in adapter_state under the pseudo-account "social".
  const mediaLinks = createMediaLinks({ store: createAdapterStateStore(db, "social"), publicUrl: deps.config.server.public_url, now });
  const service = createSocialService({
    publicMediaLinks: isPublicUrl(deps.config.server.public_url),
    urlProblem: deps.outbound.staticProblem,
    repo,
    unit: db.unit,
    join: db.join,
    runtime,
    queue: deps.queue,
    events: deps.events,
    now,
    mediaType: async (companyId, mediaId) => (await holdMediaForUse({ db, companyId, mediaId }))?.mimeType,
  });
  const analytics = createAnalytics({
    repo,
    unit: db.unit,
    runtime,
    now,
    log: log.child({ module: "social" }),
    companyIdOf: async (slug) => (await findCompanyBySlug({ db, slug }))?.id,
    queue: deps.queue,
    metricsDelayMs: deps.config.social.metrics_after_publish_seconds * 1000,
    refreshIntervalMs: deps.config.social.refresh_interval_seconds * 1000,
  });
  const engine = createPublishEngine({
    repo,
    unit: db.unit,
    runtime,
    events: deps.events,
    now,
    log: log.child({ module: "social" }),
    resolveMedia: (companyId, mediaId) => findStoredMedia({ db, companyId, mediaId }),
    mediaLink: mediaLinks.link,
    onPublished: analytics.pullAfterPublish,
  });
  return {
    repo,
    service,
    engine,
    analytics,
    mediaLinks,
    /** Company id → slug (social accounts belong to a company by slug, as in the config). */
    slugOf: async (companyId: string) => (await getCompany({ db, id: companyId })).slug,
  };
}
