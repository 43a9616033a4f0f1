import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestContext, LOOPBACK_MEDIA } from "../../../test/fakes/adapter-context";
import { PROBE_OUTBOUND, startProbeTargets } from "../../../test/helpers/outbound-probes";
import type { OutboundConfig } from "../../platform/outbound/outbound.policy";
import { SmtpPeer } from "../../../test/fakes/smtp.peer";
import type { ChannelAdapter, OutboundMessage } from "../channel.types";
import { createSmtpAdapter } from "./smtp.adapter";
import { smtpFailure } from "./smtp.errors";

let peer: SmtpPeer;
let a: ChannelAdapter;
const NOW = new Date("2026-03-01T12:00:00Z");
beforeAll(async () => {
  peer = await SmtpPeer.start({ username: "mailer", password: "pw" });
  a = adapter();
});
afterAll(async () => {
  await a.stop!();
  await peer.stop();
});
beforeEach(() => {
  peer.messages.length = 0;
  peer.clearRejections();
});

function adapter(settings: Record<string, unknown> = {}, outbound: Partial<OutboundConfig> = LOOPBACK_MEDIA) {
  const t = createTestContext({
    outbound,
    provider: "smtp",
    channel: "email",
    settings: {
      host: "127.0.0.1",
      port: peer.port,
      secure: false,
      username: "mailer",
      password: "pw",
      from: "Shop Support <support@shop.example>",
      ...settings,
    },
    now: NOW,
  });
  return createSmtpAdapter(t.ctx);
}
const mail = (extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  messageId: "0190f0f0-aaaa-7000-8000-000000000001",
  to: { value: "ann@customer.example", displayName: "Ann Lee" },
  content: { type: "email", email: { subject: "Your order A123", text: "It shipped.", html: "<p>It <b>shipped</b>.</p>" } },
  ...extra,
});

describe("smtp send", () => {
  test("email content: our Message-ID, subject, text + html, envelope, AUTH", async () => {
    const r = await a.send(mail());
    expect(r).toEqual({ ok: true, providerMessageId: "<0190f0f0-aaaa-7000-8000-000000000001@shop.example>" });
    const [got] = await peer.waitForMessages(1);
    expect(got.authUser).toBe("mailer");
    expect(got.envelope).toEqual({ from: "support@shop.example", to: ["ann@customer.example"] });
    expect(got.parsed.messageId).toBe("<0190f0f0-aaaa-7000-8000-000000000001@shop.example>");
    expect(got.parsed.subject).toBe("Your order A123");
    expect(got.parsed.text?.trim()).toBe("It shipped.");
    expect(got.parsed.html).toBe("<p>It <b>shipped</b>.</p>");
    expect(got.parsed.from?.value[0]).toEqual({ address: "support@shop.example", name: "Shop Support" });
    expect(got.parsed.to && !Array.isArray(got.parsed.to) && got.parsed.to.value[0]).toEqual({ address: "ann@customer.example", name: "Ann Lee" });
    expect(got.parsed.date?.toISOString()).toBe(NOW.toISOString());
    expect(got.raw.toString()).toMatch(/^Message-ID: <0190f0f0-aaaa-7000-8000-000000000001@shop\.example>\r$/m);
  });

  test("reply: In-Reply-To and References headers on the wire", async () => {
    const r = await a.send(mail({ replyTo: { providerMessageId: "<CAF=abc@mail.customer.example>", references: ["<first@shop.example>"] } }));
    expect(r.ok).toBe(true);
    const [got] = await peer.waitForMessages(1);
    expect(got.parsed.inReplyTo).toBe("<CAF=abc@mail.customer.example>");
    expect(got.parsed.references).toEqual(["<first@shop.example>", "<CAF=abc@mail.customer.example>"]);
    expect(got.raw.toString()).toMatch(/^In-Reply-To: <CAF=abc@mail\.customer\.example>\r$/m);
    expect(got.raw.toString()).toMatch(/^References: <first@shop\.example> <CAF=abc@mail\.customer\.example>\r$/m);
  });

  test("one-click unsubscribe: List-Unsubscribe and List-Unsubscribe-Post on the wire, the URL whole (RFC 8058); none without a URL", async () => {
    const url = `https://mail.shop.example/u/${"AbCd_-09".repeat(11)}`;
    expect((await a.send(mail({ unsubscribeUrl: url }))).ok).toBe(true);
    const [got] = await peer.waitForMessages(1);
    // nodemailer folds a long header after its colon (RFC 5322 folding white space; the URL stays whole).
    const headers = got.raw
      .toString()
      .split("\r\n\r\n")[0]!
      .replace(/\r\n[ \t]+/g, " ")
      .split("\r\n");
    expect(headers).toContain(`List-Unsubscribe: <${url}>`);
    expect(headers).toContain("List-Unsubscribe-Post: List-Unsubscribe=One-Click");
    peer.messages.length = 0;
    expect((await a.send(mail())).ok).toBe(true);
    const [plain] = await peer.waitForMessages(1);
    expect(plain.raw.toString()).not.toMatch(/^List-Unsubscribe/im);
  });

  test("template: rendered subject/text/html", async () => {
    await a.send(
      mail({
        content: {
          type: "template",
          template: { name: "n", language: "en", components: [], params: {}, rendered: { subject: "Hi Ann", text: "Hello Ann", html: "<p>Hello Ann</p>" } },
        },
      }),
    );
    const [got] = await peer.waitForMessages(1);
    expect(got.parsed.subject).toBe("Hi Ann");
    expect(got.parsed.text?.trim()).toBe("Hello Ann");
    expect(got.parsed.html).toBe("<p>Hello Ann</p>");
  });

  test("media: stored file as attachment, caption as text", async () => {
    const dir = mkdtempSync(join(tmpdir(), "smtp-media-"));
    writeFileSync(join(dir, "invoice.pdf"), "%PDF-1.4 test");
    try {
      await a.send(
        mail({
          content: {
            type: "media",
            media: {
              caption: "Your invoice",
              file: { id: "m", path: join(dir, "invoice.pdf"), mimeType: "application/pdf", filename: "invoice.pdf", size: 13 },
            },
          },
        }),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const [got] = await peer.waitForMessages(1);
    expect(got.parsed.text?.trim()).toBe("Your invoice");
    expect(got.parsed.attachments).toHaveLength(1);
    expect(got.parsed.attachments[0]).toMatchObject({ filename: "invoice.pdf", contentType: "application/pdf" });
    expect(got.parsed.attachments[0].content.toString()).toBe("%PDF-1.4 test");
  });

  test("media by URL: the bytes are fetched through the guarded fetcher and attached as content", async () => {
    const pdf = "%PDF-1.4 served";
    const origin = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(pdf, { headers: { "content-type": "application/pdf" } }) });
    try {
      const r = await a.send(
        mail({ content: { type: "media", media: { caption: "Your invoice", url: `http://127.0.0.1:${origin.port}/docs/invoice%20may.pdf` } } }),
      );
      expect(r.ok).toBe(true);
    } finally {
      origin.stop(true);
    }
    const [got] = await peer.waitForMessages(1);
    expect(got.parsed.attachments[0]).toMatchObject({ filename: "invoice may.pdf", contentType: "application/pdf" });
    expect(got.parsed.attachments[0].content.toString()).toBe(pdf);
  });

  describe("attachment URLs that lead inside are refused, never fetched, nothing sent (issue 34)", () => {
    const targets = startProbeTargets();
    let b: ChannelAdapter;
    beforeAll(() => (b = adapter({}, PROBE_OUTBOUND)));
    afterAll(async () => {
      await b.stop!();
      targets.stop();
    });
    for (const [name, url] of Object.entries(targets.probes)) {
      test(`media ${name}`, async () => {
        const r = await b.send(mail({ content: { type: "media", media: { url, caption: "see" } } }));
        expect(r).toMatchObject({ ok: false, retry: false, reason: "URL_NOT_ALLOWED" });
        expect(targets.hits).toBe(0);
        expect(peer.messages).toHaveLength(0);
      });
      test(`template headerMediaUrl ${name}`, async () => {
        const r = await b.send(
          mail({
            content: {
              type: "template",
              template: { name: "n", language: "en", components: [], params: {}, headerMedia: { url }, rendered: { subject: "Hi", text: "Hello" } },
            },
          }),
        );
        expect(r).toMatchObject({ ok: false, retry: false, reason: "URL_NOT_ALLOWED" });
        expect(targets.hits).toBe(0);
        expect(peer.messages).toHaveLength(0);
      });
    }
  });

  test("550 recipient → RECIPIENT_INVALID, permanent", async () => {
    peer.rejectRecipient("gone@customer.example", 550, "No such user here");
    const r = await a.send(mail({ to: { value: "gone@customer.example" } }));
    expect(r).toMatchObject({ ok: false, retry: false, reason: "RECIPIENT_INVALID", providerCode: "550" });
    if (!r.ok) expect(r.message).toContain("No such user here");
  });

  test("451 recipient → retry PROVIDER_UNAVAILABLE", async () => {
    peer.rejectRecipient("later@customer.example", 451);
    expect(await a.send(mail({ to: { value: "later@customer.example" } }))).toMatchObject({
      ok: false,
      retry: true,
      reason: "PROVIDER_UNAVAILABLE",
      providerCode: "451",
    });
  });

  test("wrong password → AUTH_FAILED + auth_failed", async () => {
    const b = adapter({ password: "wrong" });
    const r = await b.send(mail());
    await b.stop!();
    expect(r).toMatchObject({ ok: false, retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" });
  });

  test("nothing listening → retry PROVIDER_UNAVAILABLE", async () => {
    const b = adapter({ port: 1 });
    const r = await b.send(mail());
    await b.stop!();
    expect(r).toMatchObject({ ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE" });
  });

  test("no webhooks for e-mail: 404 and no events", async () => {
    const r = await a.handleWebhook({ method: "POST", url: new URL("http://localhost/hooks/x"), headers: new Headers(), rawBody: new Uint8Array() });
    expect(r).toEqual({ response: { status: 404, body: expect.any(String) }, events: [] });
  });
});

describe("smtp error table", () => {
  const cases: [string, Parameters<typeof smtpFailure>[0], object][] = [
    ["551", { code: "EENVELOPE", responseCode: 551, response: "551 not local" }, { retry: false, reason: "RECIPIENT_INVALID" }],
    ["553", { code: "EENVELOPE", responseCode: 553, response: "553 bad mailbox name" }, { retry: false, reason: "RECIPIENT_INVALID" }],
    ["554 policy", { code: "EMESSAGE", responseCode: 554, response: "554 spam" }, { retry: false, reason: "PROVIDER_REJECTED" }],
    ["535", { code: "EAUTH", responseCode: 535, response: "535 bad creds" }, { retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" }],
    ["421", { code: "EPROTOCOL", responseCode: 421, response: "421 shutting down" }, { retry: true, reason: "PROVIDER_UNAVAILABLE" }],
    ["ETIMEDOUT", { code: "ETIMEDOUT", message: "Connection timeout" }, { retry: true, reason: "PROVIDER_UNAVAILABLE" }],
    ["ECONNECTION", { code: "ECONNECTION", message: "refused" }, { retry: true, reason: "PROVIDER_UNAVAILABLE" }],
  ];
  for (const [name, err, expected] of cases) test(name, () => expect(smtpFailure(err)).toMatchObject({ ok: false, ...expected }));
});
