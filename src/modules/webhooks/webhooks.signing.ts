/**
 * Standard Webhooks signing (standardwebhooks.com, spec v1):
 *   webhook-id         the message id, the same on every retry and redelivery (receivers dedupe on it)
 *   webhook-timestamp  this attempt's time, integer Unix seconds
 *   webhook-signature  space-separated `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`, one per
 *                      active secret (two during the 24 h after a rotation)
 * Secrets are `whsec_` + base64 of 32 random bytes; the HMAC key is the decoded bytes.
 * HMAC comes from node:crypto — never hand-rolled.
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";
/** How long the previous secret keeps signing after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, "base64");
}

export function sign({ secret, id, timestamp, body }: { secret: string; id: string; timestamp: number; body: string }): string {
  return "v1," + createHmac("sha256", secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest("base64");
}

/** The three headers of one attempt; `secrets` are the active ones, newest first. */
export function signedHeaders({ secrets, id, at, body }: { secrets: string[]; id: string; at: Date; body: string }): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": secrets.map((secret) => sign({ secret, id, timestamp, body })).join(" "),
  };
}

/** The secrets that sign at `now`: the current one, plus the previous one inside its overlap window. */
export function activeSecrets(e: { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null }, now: Date): string[] {
  return e.previousSecret && e.previousSecretExpiresAt && e.previousSecretExpiresAt.getTime() > now.getTime() ? [e.secret, e.previousSecret] : [e.secret];
}
