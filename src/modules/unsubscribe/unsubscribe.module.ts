/**
 * The unsubscribe module (DESIGN §20): its service (unsubscribe.service.ts) and its public routes. Built once per
 * app (src/assembly.ts); the service asynchronously (the secret is read, or claimed, from the database first): the
 * routes start building it, and a send awaits the same promise.
 */
import { unsubscribeRoutes } from "./unsubscribe.routes";
import { buildUnsubscribe, type Unsubscribe, type UnsubscribeNeeds } from "./unsubscribe.service";

export function createUnsubscribeModule(needs: UnsubscribeNeeds) {
  let building: Promise<Unsubscribe> | undefined;
  /** The tokens and the opt-out of this app, built on first use (its secret is claimed once). */
  const load = (): Promise<Unsubscribe> => {
    if (building) return building;
    const b = (building = buildUnsubscribe(needs));
    // A database that failed (a restart of it) must not leave a refused promise behind for every later send.
    b.catch(() => {
      if (building === b) building = undefined;
    });
    return b;
  };
  return {
    routes: unsubscribeRoutes(needs, load),
    /** What the messages module puts in mail: `load` resolves to the links (`url`). */
    service: { load },
  };
}
