import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { answerHandshake, verifyHubSignature } from "./meta.signature";

const secret = "app-secret";
const body = new TextEncoder().encode('{"object":"page","entry":[]}');
const sign = (b: Uint8Array, s = secret) => `sha256=${createHmac("sha256", s).update(b).digest("hex")}`;

describe("X-Hub-Signature-256", () => {
  test("accepts the HMAC of the exact bytes (hex case-insensitive)", () => {
    expect(verifyHubSignature({ appSecret: secret, rawBody: body, header: sign(body) })).toBe(true);
    expect(verifyHubSignature({ appSecret: secret, rawBody: body, header: sign(body).toUpperCase().replace("SHA256=", "sha256=") })).toBe(true);
  });
  test("rejects a wrong secret, a missing header, a malformed header, an altered byte, an empty secret", () => {
    expect(verifyHubSignature({ appSecret: secret, rawBody: body, header: sign(body, "other") })).toBe(false);
    expect(verifyHubSignature({ appSecret: secret, rawBody: body, header: null })).toBe(false);
    expect(verifyHubSignature({ appSecret: secret, rawBody: body, header: "sha1=abc" })).toBe(false);
    expect(verifyHubSignature({ appSecret: secret, rawBody: body, header: `${sign(body)}00` })).toBe(false);
    const altered = body.slice();
    altered[5] ^= 1;
    expect(verifyHubSignature({ appSecret: secret, rawBody: altered, header: sign(body) })).toBe(false);
    expect(verifyHubSignature({ appSecret: "", rawBody: body, header: sign(body, "") })).toBe(false);
  });
});

describe("hub.challenge handshake", () => {
  const url = (q: string) => new URL(`http://x/hooks/a?${q}`);
  test("right token → 200 with the challenge as text", () => {
    expect(answerHandshake({ url: url("hub.mode=subscribe&hub.verify_token=tok&hub.challenge=1158201444"), verifyToken: "tok" })).toMatchObject({
      status: 200,
      body: "1158201444",
    });
  });
  test("wrong token, wrong mode, missing challenge or empty configured token → 403", () => {
    expect(answerHandshake({ url: url("hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1"), verifyToken: "tok" }).status).toBe(403);
    expect(answerHandshake({ url: url("hub.mode=unsubscribe&hub.verify_token=tok&hub.challenge=1"), verifyToken: "tok" }).status).toBe(403);
    expect(answerHandshake({ url: url("hub.mode=subscribe&hub.verify_token=tok"), verifyToken: "tok" }).status).toBe(403);
    expect(answerHandshake({ url: url("hub.mode=subscribe&hub.verify_token=&hub.challenge=1"), verifyToken: "" }).status).toBe(403);
  });
  test("right token but a challenge not of Meta's shape (markup, JSON, empty, over 128) → 403, nothing echoed", () => {
    for (const challenge of ["<script>alert(1)</script>", '{"object":"page"}', "", "a b", "1".repeat(129)]) {
      const answer = answerHandshake({
        url: url(`hub.mode=subscribe&hub.verify_token=tok&hub.challenge=${encodeURIComponent(challenge)}`),
        verifyToken: "tok",
      });
      expect(answer.status).toBe(403);
      expect(answer.body).not.toContain(challenge || "\u0000");
    }
    expect(answerHandshake({ url: url(`hub.mode=subscribe&hub.verify_token=tok&hub.challenge=${"9".repeat(128)}`), verifyToken: "tok" }).status).toBe(200);
  });
});
