/** One access line per request: request id, method, route, status, ms, key id (never the key). */
import { Elysia } from "elysia";
import type { Logger } from "../logger";
import { requestFacts } from "./request-context";

export function accessLogPlugin({ log }: { log: Logger }) {
  return new Elysia({ name: "access-log" })
    .onAfterResponse(({ request, set, route, response }) => {
      if (!log.isLevelEnabled("info")) return;
      const f = requestFacts(request);
      const status = response instanceof Response ? response.status : typeof set.status === "number" ? set.status : 200;
      log.info(
        {
          requestId: f?.requestId,
          method: request.method,
          route: route || new URL(request.url).pathname,
          status,
          ms: f ? Math.round((performance.now() - f.startedAt) * 10) / 10 : undefined,
          keyId: f?.apiKeyId,
        },
        "request",
      );
    })
    .as("global");
}
