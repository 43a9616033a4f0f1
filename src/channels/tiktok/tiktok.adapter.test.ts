import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, LOOPBACK_MEDIA } from "../../../test/fakes/adapter-context";
import { PROBE_OUTBOUND, startProbeTargets } from "../../../test/helpers/outbound-probes";
import { TiktokFake, tiktokErrors } from "../../../test/fakes/tiktok.fake";
import type { OutboundMessage } from "../channel.types";
import { createTiktokAdapter } from "./tiktok.adapter";

const fake = TiktokFake.start({ accessToken: "tt-token" });
const images = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: () => new Response(new Uint8Array([0x89, 0x50, 0x4e, 0x47]), { headers: { "content-type": "image/png" } }),
});
afterAll(async () => {
  await fake.stop();
  images.stop(true);
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  fake.requests.length = 0;
});

function adapter(settings: Record<string, unknown> = {}, outbound = LOOPBACK_MEDIA) {
  const t = createTestContext({
    provider: "tiktok",
    channel: "tiktok",
    settings: { business_id: "biz-1", access_token: "tt-token", client_secret: "cs", base_url: fake.url, ...settings },
    outbound,
  });
  return { ...t, adapter: createTiktokAdapter(t.ctx) };
}
const textTo = (conversationRef: string | undefined, text = "Thanks for writing!"): OutboundMessage => ({
  messageId: "m1",
  to: { value: "user-9", conversationRef },
  content: { type: "text", text },
});
const dir = mkdtempSync(join(tmpdir(), "tt-media-"));
writeFileSync(join(dir, "a.jpg"), new Uint8Array([0xff, 0xd8, 0xff, 0xd9]));

describe("tiktok send", () => {
  test("text → exact path, Access-Token header and JSON body", async () => {
    const { adapter: a } = adapter();
    const r = await a.send(textTo("conv-abc"));
    expect(r).toEqual({ ok: true, providerMessageId: expect.stringMatching(/^msg-\d+$/) });
    const [req] = fake.requests;
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/open_api/v1.3/business/message/send/");
    expect(req.headers["access-token"]).toBe("tt-token");
    expect(req.headers.authorization).toBeUndefined();
    expect(new TextDecoder().decode(req.raw)).toBe(
      '{"business_id":"biz-1","recipient_type":"CONVERSATION","recipient":"conv-abc","message_type":"TEXT","text":{"body":"Thanks for writing!"}}',
    );
  });

  test("no conversationRef → RECIPIENT_INVALID, no request", async () => {
    const { adapter: a } = adapter();
    expect(await a.send(textTo(undefined))).toMatchObject({ ok: false, retry: false, reason: "RECIPIENT_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });

  test("template → rendered text", async () => {
    const { adapter: a } = adapter();
    await a.send({
      messageId: "m",
      to: { value: "u", conversationRef: "c" },
      content: { type: "template", template: { name: "n", language: "en", components: [], params: {}, rendered: { text: "Hi Ann" } } },
    });
    expect((fake.requests[0].body as any).text).toEqual({ body: "Hi Ann" });
  });

  test("stored image → upload, IMAGE send, media id returned for caching; caption follows as text", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({
      messageId: "m",
      to: { value: "u", conversationRef: "conv-1" },
      content: {
        type: "media",
        media: { file: { id: "med", path: join(dir, "a.jpg"), mimeType: "image/jpeg", filename: "a.jpg", size: 4 }, caption: "your parcel" },
      },
    });
    expect(r).toMatchObject({ ok: true, providerMediaId: expect.stringMatching(/^media-\d+$/) });
    const [upload, image, caption] = fake.requests;
    expect(upload.path).toBe("/open_api/v1.3/business/message/media/upload/");
    expect(upload.headers["content-type"]).toStartWith("multipart/form-data");
    expect(upload.headers["access-token"]).toBe("tt-token");
    const form = upload.body as Record<string, any>;
    expect(form.business_id).toBe("biz-1");
    expect(form.media_type).toBe("IMAGE");
    expect(form.file).toMatchObject({ filename: "a.jpg", type: "image/jpeg", size: 4 });
    expect(image.body).toEqual({
      business_id: "biz-1",
      recipient_type: "CONVERSATION",
      recipient: "conv-1",
      message_type: "IMAGE",
      image: { media_id: r.ok ? r.providerMediaId : "" },
    });
    expect(caption.body).toMatchObject({ message_type: "TEXT", text: { body: "your parcel" } });
  });

  test("cached media id → no upload", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({
      messageId: "m",
      to: { value: "u", conversationRef: "c" },
      content: { type: "media", media: { file: { id: "x", path: "/nope", mimeType: "image/png", filename: "x.png", size: 1, providerMediaId: "cached-7" } } },
    });
    expect(r).toEqual({ ok: true, providerMessageId: expect.any(String) });
    expect(fake.requests.map((q) => q.path)).toEqual(["/open_api/v1.3/business/message/send/"]);
    expect((fake.requests[0].body as any).image).toEqual({ media_id: "cached-7" });
  });

  test("image by URL → fetched and uploaded", async () => {
    const { adapter: a } = adapter();
    const r = await a.send({
      messageId: "m",
      to: { value: "u", conversationRef: "c" },
      content: { type: "media", media: { url: `http://127.0.0.1:${images.port}/pics/box.png` } },
    });
    expect(r.ok).toBe(true);
    expect((fake.requests[0].body as any).file).toMatchObject({ filename: "box.png", type: "image/png", size: 4 });
  });

  describe("media URLs that lead inside are refused and never fetched (issue 34)", () => {
    const targets = startProbeTargets();
    afterAll(() => targets.stop());
    for (const [name, url] of Object.entries(targets.probes)) {
      test(name, async () => {
        const { adapter: a } = adapter({}, PROBE_OUTBOUND);
        const r = await a.send({ messageId: "m", to: { value: "u", conversationRef: "c" }, content: { type: "media", media: { url } } });
        expect(r).toMatchObject({ ok: false, retry: false, reason: "URL_NOT_ALLOWED" });
        expect(targets.hits).toBe(0);
        expect(fake.requests).toHaveLength(0);
      });
    }
  });

  test("a PDF is refused with MEDIA_INVALID", async () => {
    const { adapter: a } = adapter();
    writeFileSync(join(dir, "d.pdf"), "%PDF");
    const r = await a.send({
      messageId: "m",
      to: { value: "u", conversationRef: "c" },
      content: { type: "media", media: { file: { id: "d", path: join(dir, "d.pdf"), mimeType: "application/pdf", filename: "d.pdf", size: 4 } } },
    });
    expect(r).toMatchObject({ ok: false, retry: false, reason: "MEDIA_INVALID" });
    expect(fake.requests).toHaveLength(0);
  });
});

describe("tiktok error mapping", () => {
  const cases = [
    {
      name: "40105 token revoked",
      failure: tiktokErrors.tokenInvalid(),
      expected: { retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed", providerCode: "40105" },
    },
    { name: "40100 too many requests", failure: tiktokErrors.tooManyRequests(), expected: { retry: true, reason: "RATE_LIMITED", providerCode: "40100" } },
    { name: "40001 no permission", failure: tiktokErrors.noPermission(), expected: { retry: false, reason: "PROVIDER_REJECTED", accountStatus: "error" } },
    {
      name: "unknown code",
      failure: tiktokErrors.windowClosed(),
      expected: { retry: false, reason: "PROVIDER_REJECTED", providerCode: "40051", message: "The conversation is outside the messaging window." },
    },
    { name: "50000 system error", failure: tiktokErrors.systemError(), expected: { retry: true, reason: "PROVIDER_UNAVAILABLE" } },
    { name: "HTTP 500", failure: tiktokErrors.http500(), expected: { retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "500" } },
    { name: "dropped connection", failure: { kind: "drop" as const }, expected: { retry: true, reason: "PROVIDER_UNAVAILABLE" } },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const { adapter: a } = adapter();
      fake.fail("send", c.failure);
      expect(await a.send(textTo("conv"))).toMatchObject({ ok: false, ...c.expected });
    });
  }

  test("wrong access token → the fake's 40105", async () => {
    const { adapter: a } = adapter({ access_token: "Bearer tt-token" });
    expect(await a.send(textTo("conv"))).toMatchObject({ ok: false, reason: "AUTH_FAILED" });
  });
});
