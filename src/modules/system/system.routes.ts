/**
 * Operator endpoints outside the API prefix: liveness, readiness and the offline docs UI bundle.
 * NB! The Scalar bundle is embedded in the binary (`with { type: "file" }`): the appliance may have no
 * internet, and a CDN script would leave /docs blank.
 */
import { Elysia } from "elysia";
import scalarBundle from "../../../node_modules/@scalar/api-reference/dist/browser/standalone.js" with { type: "file" };
import type { Deps } from "../../deps";
import { VERSION } from "../../version";

export const systemRoutes = (deps: Deps) =>
  new Elysia()
    .get("/healthz", () => ({ status: "ok", version: VERSION }))
    .get("/readyz", ({ set }) => {
      try {
        deps.db.$client.query("SELECT 1").get();
        return { status: "ready" };
      } catch {
        set.status = 503;
        return { status: "unavailable" };
      }
    })
    .get("/docs/scalar.js", () => new Response(Bun.file(scalarBundle), { headers: { "content-type": "application/javascript", "cache-control": "public, max-age=86400" } }));
