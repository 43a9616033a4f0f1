/**
 * Token bucket per API key, in memory (one appliance process serves all requests). Headers follow the
 * IETF draft (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy: "default";q=<burst>;w=<seconds to
 * refill a full bucket>` and `RateLimit: "default";r=<remaining>;t=<seconds until the bucket is full again>`.
 */
export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
  retryAfterSeconds: number;
}

export function createRateLimiter({ now }: { now: () => number }) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key: string, { ratePerSecond, burst }: { ratePerSecond: number; burst: number }): RateDecision {
      const t = now();
      const b = buckets.get(key) ?? { tokens: burst, at: t };
      b.tokens = Math.min(burst, b.tokens + ((t - b.at) / 1000) * ratePerSecond);
      b.at = t;
      const allowed = b.tokens >= 1;
      if (allowed) b.tokens -= 1;
      buckets.set(key, b);
      const window = Math.max(1, Math.ceil(burst / ratePerSecond));
      const untilFull = Math.ceil((burst - b.tokens) / ratePerSecond);
      const retryAfterSeconds = allowed ? 0 : Math.max(1, Math.ceil((1 - b.tokens) / ratePerSecond));
      return {
        allowed,
        retryAfterSeconds,
        headers: {
          "ratelimit-policy": `"default";q=${burst};w=${window}`,
          ratelimit: `"default";r=${Math.floor(b.tokens)};t=${untilFull}`,
        },
      };
    },
  };
}
export type RateLimiter = ReturnType<typeof createRateLimiter>;
