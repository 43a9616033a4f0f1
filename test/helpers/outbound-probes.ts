/**
 * Media URLs an attacker would give to reach internal services (DESIGN §23, issue 34 row 2), and a loopback
 * "internal service" that counts every request it gets: a path that fetches caller URLs must refuse each
 * probe with URL_NOT_ALLOWED and leave the count at 0.
 *
 * The redirect probe needs a first hop the policy allows: a redirector on 127.0.0.2, allowed by the single
 * address in PROBE_OUTBOUND, that answers 302 to the internal service on 127.0.0.1 (not allowed).
 */
import type { OutboundConfig } from "../../src/platform/outbound/outbound.policy";

/** `[outbound]` for probe tests: only the redirector's address is allowed. */
export const PROBE_OUTBOUND: Partial<OutboundConfig> = { allow: ["127.0.0.2/32"] };

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export interface ProbeTargets {
  /** Requests the internal service received. */
  readonly hits: number;
  /** Name → URL of each probe (all image-looking, so only the address rules can refuse them). */
  probes: Record<"loopback" | "link-local" | "metadata" | "redirect to loopback", string>;
  stop(): void;
}

export function startProbeTargets(): ProbeTargets {
  let hits = 0;
  // Serves a valid image, so a path that does reach it would succeed: only a refusal keeps the count at 0.
  const internal = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => (hits++, new Response(PNG, { headers: { "content-type": "image/png" } })) });
  const redirector = Bun.serve({
    hostname: "127.0.0.2",
    port: 0,
    fetch: (req) => new Response(null, { status: 302, headers: { location: `http://127.0.0.1:${internal.port}${new URL(req.url).pathname}` } }),
  });
  return {
    get hits() {
      return hits;
    },
    probes: {
      loopback: `http://127.0.0.1:${internal.port}/secret.png`,
      "link-local": "http://169.254.169.254/latest/meta-data/iam.png",
      metadata: "http://metadata.google.internal/computeMetadata/v1/token.png",
      "redirect to loopback": `http://127.0.0.2:${redirector.port}/secret.png`,
    },
    stop() {
      internal.stop(true);
      redirector.stop(true);
    },
  };
}
