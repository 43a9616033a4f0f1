/**
 * The social module of one app: its repository, service, publishing engine and analytics, built once per app
 * (src/assembly.ts) from exactly what each part uses (the composition root of this module), and the routes and
 * the wiring that share them.
 */
import type { SocialNeeds } from "./social.needs";
import { buildSocial } from "./social.build";
import { socialPublicRoutes, socialRoutes } from "./social.routes";
import { startSocial, wireSocial } from "./social.wire";

export function createSocialModule(needs: SocialNeeds) {
  const social = buildSocial(needs);
  return {
    /** Under the API prefix. */
    routes: socialRoutes(needs, social),
    /** Outside it: the signed media links platforms fetch. */
    publicRoutes: socialPublicRoutes(needs, social),
    wire: () => wireSocial(needs, social),
    start: () => startSocial(social),
    service: social,
  };
}
