/**
 * One access line per request (request id, method, route, status, ms, key id — never the key), and the
 * request metrics (by route pattern; unmatched paths are counted as "unmatched", never by raw path).
 */
import { Elysia } from "elysia";
import type { Logger } from "../logger";
import type { Metrics } from "./metrics";
import { pathOf, requestFacts } from "./request-context";

export function accessLogPlugin({ log, metrics }: { log: Logger; metrics: Metrics }) {
  return new Elysia({ name: "access-log" })
    .onAfterResponse(({ request, set, route, response }) => {
      const f = requestFacts(request);
      const status = response instanceof Response ? response.status : typeof set.status === "number" ? set.status : 200;
      metrics.observeRequest(request.method, route || "unmatched", status, f ? (performance.now() - f.startedAt) / 1000 : 0);
      if (!log.isLevelEnabled("info")) return;
      log.info(
        {
          requestId: f?.requestId,
          method: request.method,
          route: route || pathOf(request),
          status,
          ms: f ? Math.round((performance.now() - f.startedAt) * 10) / 10 : undefined,
          keyId: f?.apiKeyId,
        },
        "request",
      );
    })
    .as("global");
}
