import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { oauth1SignatureValid, parseOAuthHeader, XFake, xErrors } from "../../../test/fakes/x.fake";
import type { OutboundMessage } from "../channel.types";
import { createXAdapter } from "./x.adapter";

const OUR_ID = "1000000001";
const oauth1 = { consumer_key: "ck-key", consumer_secret: "cs-secret/+=", access_token: `${OUR_ID}-at`, access_token_secret: "ats secret!" };
const fake = XFake.start({ userId: OUR_ID, oauth1: { consumerSecret: oauth1.consumer_secret, tokenSecret: oauth1.access_token_secret } });
afterAll(() => fake.stop());
beforeEach(() => {
  fake.requests.length = 0;
});

const NOW = new Date("2026-03-01T12:00:00Z");
function adapter(settings: Record<string, unknown>) {
  const t = createTestContext({ provider: "x", channel: "x", settings: { user_id: OUR_ID, base_url: fake.url, ...settings }, now: NOW });
  return { ...t, adapter: createXAdapter(t.ctx) };
}
const dm = (to: string, text: string): OutboundMessage => ({ messageId: "m1", to: { value: to }, content: { type: "text", text } });

describe("x send", () => {
  test("OAuth 2: exact path, Bearer header and JSON body; dm_event_id returned", async () => {
    const { adapter: a } = adapter({ access_token: "user-token-2" });
    const r = await a.send(dm("2244994945", "Hello from the shop"));
    expect(r).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^\d+$/) });
    const [req] = fake.requests;
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/2/dm_conversations/with/2244994945/messages");
    expect(req.headers.authorization).toBe("Bearer user-token-2");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(new TextDecoder().decode(req.raw)).toBe('{"text":"Hello from the shop"}');
  });

  test("OAuth 1.0a: Authorization header verifies (independent check) and uses the injected clock", async () => {
    const { adapter: a } = adapter(oauth1);
    const r = await a.send(dm("2244994945", "hi"));
    expect(r.ok).toBe(true); // the fake verified the signature, else 401
    const auth = fake.requests[0].headers.authorization;
    const params = parseOAuthHeader(auth);
    expect(params).toMatchObject({
      oauth_consumer_key: "ck-key",
      oauth_token: `${OUR_ID}-at`,
      oauth_signature_method: "HMAC-SHA1",
      oauth_version: "1.0",
      oauth_timestamp: String(NOW.getTime() / 1000),
    });
    const url = `${fake.url}/2/dm_conversations/with/2244994945/messages`;
    expect(oauth1SignatureValid({ method: "POST", url, authorization: auth, consumerSecret: oauth1.consumer_secret, tokenSecret: oauth1.access_token_secret })).toBe(true);
    // and a wrong secret does not verify: the check is real
    expect(oauth1SignatureValid({ method: "POST", url, authorization: auth, consumerSecret: "other", tokenSecret: oauth1.access_token_secret })).toBe(false);
  });

  test("OAuth 1.0a with a wrong secret → fake's 401 → AUTH_FAILED", async () => {
    const { adapter: a } = adapter({ ...oauth1, consumer_secret: "wrong" });
    expect(await a.send(dm("2244994945", "hi"))).toMatchObject({ ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" });
  });

  test("template → rendered text", async () => {
    const { adapter: a } = adapter({ access_token: "t" });
    await a.send({ messageId: "m", to: { value: "5" }, content: { type: "template", template: { name: "n", language: "en", components: [], params: {}, rendered: { text: "Rendered!" } } } });
    expect(fake.requests[0].body).toEqual({ text: "Rendered!" });
  });

  test("media is refused with MEDIA_INVALID, no request", async () => {
    const { adapter: a } = adapter({ access_token: "t" });
    const r = await a.send({ messageId: "m", to: { value: "5" }, content: { type: "media", media: { url: "https://x/y.jpg" } } });
    expect(r).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });

  test("@username recipient → RECIPIENT_INVALID, no request", async () => {
    const { adapter: a } = adapter({ access_token: "t" });
    expect(await a.send(dm("@annlee", "x"))).toMatchObject({ ok: false, reason: "RECIPIENT_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });

  test("settings: half an OAuth 1.0a set or no token refuses to start", () => {
    expect(() => adapter({ consumer_key: "k", access_token: "t" })).toThrow(/OAuth 1.0a needs all/);
    expect(() => adapter({})).toThrow(/access_token is required/);
  });
});

describe("x error mapping", () => {
  const reset = NOW.getTime() / 1000 + 300;
  const cases = [
    { name: "403 not accepting DMs", failure: xErrors.notAcceptingDms(), expected: { retry: false, reason: "USER_BLOCKED", providerCode: "403", message: "You are not permitted to send a Direct Message to this user." } },
    { name: "403 client-forbidden", failure: xErrors.clientForbidden(), expected: { retry: false, reason: "PROVIDER_REJECTED", accountStatus: "error" } },
    { name: "401", failure: xErrors.unauthorized(), expected: { retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" } },
    { name: "400 invalid participant", failure: xErrors.invalidParticipant(), expected: { retry: false, reason: "RECIPIENT_INVALID" } },
    { name: "429 15-min window", failure: xErrors.rateLimited({ resetEpochS: reset, remaining: 0 }), expected: { retry: true, reason: "RATE_LIMITED", retryAfterMs: 300_000 } },
    { name: "503", failure: xErrors.serverError(), expected: { retry: true, reason: "PROVIDER_UNAVAILABLE" } },
    { name: "dropped connection", failure: { kind: "drop" as const }, expected: { retry: true, reason: "PROVIDER_UNAVAILABLE" } },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const { adapter: a } = adapter({ access_token: "t" });
      fake.fail(c.failure);
      expect(await a.send(dm("2244994945", "x"))).toMatchObject({ ok: false, ...c.expected });
    });
  }

  test("429 with the 24 h user cap exhausted waits for that reset and says so", async () => {
    const { adapter: a } = adapter({ access_token: "t" });
    const dayReset = NOW.getTime() / 1000 + 6 * 3600;
    fake.fail(xErrors.rateLimited({ resetEpochS: reset, remaining: 150, user24h: { limit: 1000, remaining: 0, resetEpochS: dayReset } }));
    const r = await a.send(dm("2244994945", "x"));
    expect(r).toMatchObject({ ok: false, retry: true, reason: "RATE_LIMITED", retryAfterMs: 6 * 3600 * 1000 });
    if (!r.ok) {
      expect(r.message).toContain("24h user limit 1000, remaining 0");
      expect(r.message).toContain("15min limit 200, remaining 150");
    }
  });
});
