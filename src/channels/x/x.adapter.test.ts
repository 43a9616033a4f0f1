import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { createTestContext, LOOPBACK_MEDIA } from "../../../test/fakes/adapter-context";
import { PROBE_OUTBOUND, startProbeTargets } from "../../../test/helpers/outbound-probes";
import { oauth1SignatureValid, parseOAuthHeader, XFake, xErrors } from "../../../test/fakes/x.fake";
import type { OutboundMessage } from "../channel.types";
import { createXAdapter } from "./x.adapter";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RecordedFile } from "../../../test/fakes/fake-http";

const OUR_ID = "1000000001";
const oauth1 = { consumer_key: "ck-key", consumer_secret: "cs-secret/+=", access_token: `${OUR_ID}-at`, access_token_secret: "ats secret!" };
const fake = XFake.start({ userId: OUR_ID, oauth1: { consumerSecret: oauth1.consumer_secret, tokenSecret: oauth1.access_token_secret } });
afterAll(() => fake.stop());
beforeEach(() => {
  fake.requests.length = 0;
});

const NOW = new Date("2026-03-01T12:00:00Z");
function adapter(settings: Record<string, unknown>, outbound = LOOPBACK_MEDIA) {
  const t = createTestContext({ provider: "x", channel: "x", settings: { user_id: OUR_ID, base_url: fake.url, ...settings }, now: NOW, outbound });
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
    expect(
      oauth1SignatureValid({ method: "POST", url, authorization: auth, consumerSecret: oauth1.consumer_secret, tokenSecret: oauth1.access_token_secret }),
    ).toBe(true);
    // and a wrong secret does not verify: the check is real
    expect(oauth1SignatureValid({ method: "POST", url, authorization: auth, consumerSecret: "other", tokenSecret: oauth1.access_token_secret })).toBe(false);
  });

  test("OAuth 1.0a with a wrong secret → fake's 401 → AUTH_FAILED", async () => {
    const { adapter: a } = adapter({ ...oauth1, consumer_secret: "wrong" });
    expect(await a.send(dm("2244994945", "hi"))).toMatchObject({ ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" });
  });

  test("template → rendered text", async () => {
    const { adapter: a } = adapter({ access_token: "t" });
    await a.send({
      messageId: "m",
      to: { value: "5" },
      content: { type: "template", template: { name: "n", language: "en", components: [], params: {}, rendered: { text: "Rendered!" } } },
    });
    expect(fake.requests[0].body).toEqual({ text: "Rendered!" });
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
    {
      name: "403 not accepting DMs",
      failure: xErrors.notAcceptingDms(),
      expected: { retry: false, reason: "USER_BLOCKED", providerCode: "403", message: "You are not permitted to send a Direct Message to this user." },
    },
    { name: "403 client-forbidden", failure: xErrors.clientForbidden(), expected: { retry: false, reason: "PROVIDER_REJECTED", accountStatus: "error" } },
    { name: "401", failure: xErrors.unauthorized(), expected: { retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" } },
    { name: "400 invalid participant", failure: xErrors.invalidParticipant(), expected: { retry: false, reason: "RECIPIENT_INVALID" } },
    {
      name: "429 15-min window",
      failure: xErrors.rateLimited({ resetEpochS: reset, remaining: 0 }),
      expected: { retry: true, reason: "RATE_LIMITED", retryAfterMs: 300_000 },
    },
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

describe("x media (chunked upload, then attachments)", () => {
  const dir = mkdtempSync(join(tmpdir(), "sb-x-media-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const stored = async (name: string, mimeType: string, size: number) => {
    const bytes = new Uint8Array(size).map((_, i) => (i * 31 + size) % 251);
    const path = join(dir, name);
    await Bun.write(path, bytes);
    return { file: { id: `media-${name}`, path, mimeType, filename: name, size }, bytes };
  };
  const mediaDm = (media: OutboundMessage["content"] & { type: "media" }): OutboundMessage => ({
    messageId: "m-media",
    to: { value: "2244994945" },
    content: media,
  });

  test("a stored 6 MB GIF: initialize (exact JSON), two appends of 4 MiB + rest, finalize, then the DM with caption and media_id (OAuth 1.0a verified on every call)", async () => {
    const { file, bytes } = await stored("anim.gif", "image/gif", 6 * 1024 * 1024);
    const { adapter: a } = adapter(oauth1);
    const r = await a.send(mediaDm({ type: "media", media: { file, caption: "Your parcel" } }));
    expect(r).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^\d+$/) });
    expect(fake.requests.map((q) => `${q.method} ${q.path}`)).toEqual([
      "POST /2/media/upload/initialize",
      expect.stringMatching(/^POST \/2\/media\/upload\/\d+\/append$/),
      expect.stringMatching(/^POST \/2\/media\/upload\/\d+\/append$/),
      expect.stringMatching(/^POST \/2\/media\/upload\/\d+\/finalize$/),
      "POST /2/dm_conversations/with/2244994945/messages",
    ]);
    const [init, a0, a1, , dmReq] = fake.requests;
    expect(new TextDecoder().decode(init!.raw)).toBe(`{"media_type":"image/gif","total_bytes":${6 * 1024 * 1024},"media_category":"dm_gif"}`);
    expect(init!.headers["content-type"]).toBe("application/json");
    for (const [q, index, size] of [
      [a0, "0", 4 * 1024 * 1024],
      [a1, "1", 2 * 1024 * 1024],
    ] as const) {
      expect(q!.headers["content-type"]).toStartWith("multipart/form-data; boundary=");
      const body = q!.body as { segment_index: string; media: RecordedFile };
      expect(body.segment_index).toBe(index);
      expect(body.media.size).toBe(size);
    }
    const mediaId = (dmReq!.body as { attachments: { media_id: string }[] }).attachments[0]!.media_id;
    expect(dmReq!.body).toEqual({ text: "Your parcel", attachments: [{ media_id: mediaId }] });
    const up = fake.uploaded(mediaId)!;
    expect(up.category).toBe("dm_gif");
    expect(Buffer.from(up.bytes).equals(Buffer.from(bytes))).toBe(true);
  });

  test("an MP4 waits for X's processing (STATUS until succeeded) before the DM; no caption → attachments only", async () => {
    const { file } = await stored("clip.mp4", "video/mp4", 300_000);
    const { adapter: a } = adapter({ access_token: "t" });
    const r = await a.send(mediaDm({ type: "media", media: { file } }));
    expect(r.ok).toBe(true);
    const calls = fake.requests.map((q) => `${q.method} ${q.path}${q.method === "GET" ? `?${q.query}` : ""}`);
    expect(calls.filter((c) => c.startsWith("GET /2/media/upload?command=STATUS&media_id="))).toHaveLength(2);
    const init = fake.requests[0]!.body as { media_category: string };
    expect(init.media_category).toBe("dm_video");
    expect(Object.keys(fake.requests.at(-1)!.body as object)).toEqual(["attachments"]);
  }, 15_000);

  test("failed processing → MEDIA_INVALID, no DM", async () => {
    const { file } = await stored("bad.mp4", "video/mp4", 1000);
    fake.failVideoProcessing = true;
    try {
      const { adapter: a } = adapter({ access_token: "t" });
      const r = await a.send(mediaDm({ type: "media", media: { file } }));
      expect(r).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID", message: expect.stringContaining("Unsupported video format") });
      expect(fake.requests.some((q) => q.path.includes("dm_conversations"))).toBe(false);
    } finally {
      fake.failVideoProcessing = false;
    }
  }, 15_000);

  test("media by URL: the served bytes are uploaded with the served type", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);
    const origin = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(png, { headers: { "content-type": "image/png" } }) });
    try {
      const { adapter: a } = adapter({ access_token: "t" });
      const r = await a.send(mediaDm({ type: "media", media: { url: `http://127.0.0.1:${origin.port}/p.png`, caption: "see" } }));
      expect(r.ok).toBe(true);
      const mediaId = (fake.requests.at(-1)!.body as { attachments: { media_id: string }[] }).attachments[0]!.media_id;
      expect(fake.uploaded(mediaId)).toMatchObject({ type: "image/png", bytes: png });
    } finally {
      await origin.stop(true);
    }
  });

  describe("media URLs that lead inside are refused and never fetched (issue 34)", () => {
    const targets = startProbeTargets();
    afterAll(() => targets.stop());
    for (const [name, url] of Object.entries(targets.probes)) {
      test(name, async () => {
        const { adapter: a } = adapter({ access_token: "t" }, PROBE_OUTBOUND);
        const r = await a.send(mediaDm({ type: "media", media: { url, caption: "see" } }));
        expect(r).toMatchObject({ ok: false, retry: false, reason: "URL_NOT_ALLOWED", message: expect.stringMatching(/^media URL not allowed: /) });
        expect(targets.hits).toBe(0);
        expect(fake.requests).toHaveLength(0); // nothing uploaded to X
      });
    }
  });

  test("a media URL serving 50 MB chunked (no Content-Length) is cut off at X's 5 MB image limit while streaming, memory flat", async () => {
    const chunk = new Uint8Array(64 * 1024).fill(1);
    let served = 0;
    const origin = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () =>
        new Response(new ReadableStream({ pull: (c) => (served >= 50 << 20 ? c.close() : ((served += chunk.byteLength), c.enqueue(chunk))) }), {
          headers: { "content-type": "image/png" },
        }),
    });
    try {
      const { adapter: a } = adapter({ access_token: "t" });
      Bun.gc(true);
      const before = process.memoryUsage().rss;
      const r = await a.send(mediaDm({ type: "media", media: { url: `http://127.0.0.1:${origin.port}/huge.png` } }));
      const grew = process.memoryUsage().rss - before;
      expect(r).toEqual({ ok: false, retry: false, reason: "MEDIA_INVALID", message: "media URL serves a file too large for this channel" });
      expect(grew).toBeLessThan(30 << 20);
      expect(served).toBeLessThan(20 << 20); // the download stopped soon after the cap (socket buffers aside)
      expect(fake.requests).toHaveLength(0);
    } finally {
      await origin.stop(true);
    }
  });

  test("a media URL's error answer is not echoed: 404 → MEDIA_INVALID, final; 503 → retried", async () => {
    const origin = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: (req) =>
        new Response("internal detail: Tomcat 9.0.1", { status: new URL(req.url).pathname === "/gone" ? 404 : 503, headers: { "content-type": "text/plain" } }),
    });
    try {
      const { adapter: a } = adapter({ access_token: "t" });
      const gone = await a.send(mediaDm({ type: "media", media: { url: `http://127.0.0.1:${origin.port}/gone` } }));
      expect(gone).toEqual({ ok: false, retry: false, reason: "MEDIA_INVALID", message: "media URL did not serve a usable file" });
      expect(await a.send(mediaDm({ type: "media", media: { url: `http://127.0.0.1:${origin.port}/busy` } }))).toMatchObject({
        ok: false,
        retry: true,
        reason: "MEDIA_INVALID",
      });
    } finally {
      await origin.stop(true);
    }
  });

  test("a type or size X does not take → MEDIA_INVALID with no request; a 5xx during the upload → retried (PROVIDER_UNAVAILABLE)", async () => {
    const { adapter: a } = adapter({ access_token: "t" });
    const { file: pdf } = await stored("doc.pdf", "application/pdf", 100);
    expect(await a.send(mediaDm({ type: "media", media: { file: pdf } }))).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    const { file: big } = await stored("big.jpg", "image/jpeg", 5 * 1024 * 1024 + 1);
    expect(await a.send(mediaDm({ type: "media", media: { file: big } }))).toMatchObject({
      ok: false,
      retry: false,
      reason: "MEDIA_INVALID",
      message: expect.stringContaining("limit"),
    });
    expect(fake.requests).toHaveLength(0);

    const { file } = await stored("p.png", "image/png", 100);
    fake.fail(xErrors.serverError()); // consumed by initialize
    expect(await a.send(mediaDm({ type: "media", media: { file } }))).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE" });
  });
});

describe("x interactive (DESIGN §16): quick-reply options", () => {
  test("buttons → text + quick_reply options (label = title, metadata = id), exact bytes", async () => {
    const { adapter: a } = adapter({ access_token: "user-token-2" });
    const r = await a.send({
      messageId: "m1",
      to: { value: "2244994945" },
      content: {
        type: "interactive",
        interactive: {
          kind: "buttons",
          body: { text: "Keep your table?" },
          footer: { text: "Reply by Thursday" },
          buttons: [
            { id: "keep", title: "Keep it" },
            { id: "cancel", title: "Cancel" },
          ],
        },
      },
    });
    expect(r.ok).toBe(true);
    expect(new TextDecoder().decode(fake.requests[0].raw)).toBe(
      '{"text":"Keep your table?\\n\\nReply by Thursday","quick_reply":{"type":"options","options":[{"label":"Keep it","metadata":"keep"},{"label":"Cancel","metadata":"cancel"}]}}',
    );
  });

  test("list → one option per row, with its description", async () => {
    const { adapter: a } = adapter({ access_token: "user-token-2" });
    await a.send({
      messageId: "m1",
      to: { value: "2244994945" },
      content: {
        type: "interactive",
        interactive: {
          kind: "list",
          body: { text: "Pick" },
          list: {
            button: "Slots",
            sections: [
              {
                rows: [
                  { id: "am", title: "Morning", description: "08-12" },
                  { id: "pm", title: "Afternoon" },
                ],
              },
            ],
          },
        },
      },
    });
    expect(fake.requests[0].body).toEqual({
      text: "Pick",
      quick_reply: {
        type: "options",
        options: [
          { label: "Morning", metadata: "am", description: "08-12" },
          { label: "Afternoon", metadata: "pm" },
        ],
      },
    });
  });
});
