/** The segments module of one app: its routes. */
import type { SegmentsNeeds } from "./segments.needs";
import { segmentsRoutes } from "./segments.routes";

export function createSegmentsModule(needs: SegmentsNeeds) {
  return { routes: segmentsRoutes(needs) };
}
