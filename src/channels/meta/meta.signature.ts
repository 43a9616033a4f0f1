/**
 * Meta webhook authentication, shared by WhatsApp Cloud, Messenger and Instagram:
 * - POSTs carry `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app_secret, raw body)>`;
 * - the subscription handshake is `GET ?hub.mode=subscribe&hub.verify_token=…&hub.challenge=…`.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export const SIGNATURE_HEADER = "x-hub-signature-256";

/**
 * true when `header` is the HMAC-SHA256 of exactly `rawBody` under `appSecret`.
 * NB! Verify the bytes as received: re-serialising parsed JSON changes escapes/whitespace and breaks the
 * signature. An empty app secret never verifies (a misconfigured account must not accept forged events).
 */
export function verifyHubSignature({ appSecret, rawBody, header }: { appSecret: string; rawBody: Uint8Array; header: string | null }): boolean {
  if (!appSecret || !header) return false;
  const match = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!match) return false;
  const expected = createHmac("sha256", appSecret).update(rawBody).digest();
  const given = Buffer.from(match[1], "hex");
  // Both are 32 bytes here (regex above), which timingSafeEqual requires.
  return timingSafeEqual(expected, given);
}

/**
 * Constant-time string equality for the verify token (it is a shared secret too). Compares SHA-256 digests,
 * so the time does not tell the secret's length either.
 */
export function secretEquals(a: string, b: string): boolean {
  const digest = (v: string) => createHash("sha256").update(v).digest();
  return timingSafeEqual(digest(a), digest(b));
}

/**
 * The shape of `hub.challenge`: Meta sends an integer-like string. NB! Echoing anything else would let
 * whoever holds the verify token make the appliance serve text of their choosing (an HTML page, a script)
 * from its own origin.
 */
export const HUB_CHALLENGE = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Answer to the subscription handshake: 200 with the challenge as plain text when the mode is `subscribe`,
 * the token matches and the challenge has Meta's shape, else 403. An empty configured token never matches.
 */
export function answerHandshake({ url, verifyToken }: { url: URL; verifyToken: string }): { status: number; body: string; headers: Record<string, string> } {
  const mode = url.searchParams.get("hub.mode");
  const token = url.searchParams.get("hub.verify_token");
  const challenge = url.searchParams.get("hub.challenge");
  const headers = { "content-type": "text/plain; charset=utf-8" };
  if (mode === "subscribe" && verifyToken && token !== null && challenge !== null && secretEquals(token, verifyToken) && HUB_CHALLENGE.test(challenge)) {
    return { status: 200, body: challenge, headers };
  }
  return { status: 403, body: "Forbidden", headers };
}
