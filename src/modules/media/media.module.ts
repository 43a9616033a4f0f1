/** The media module of one app: its routes (upload, list, metadata, content, delete). */
import type { MediaNeeds } from "./media.needs";
import { mediaRoutes } from "./media.routes";

export function createMediaModule(needs: MediaNeeds) {
  return { routes: mediaRoutes(needs) };
}
