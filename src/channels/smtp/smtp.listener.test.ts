import { afterAll, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { SmtpPeer } from "../../../test/fakes/smtp.peer";
import { createSmtpAdapter } from "./smtp.adapter";

const t = createTestContext({
  provider: "smtp",
  channel: "email",
  settings: { from: "support@shop.example", inbound_smtp_listen: "127.0.0.1:0" },
});
const adapter = createSmtpAdapter(t.ctx) as ReturnType<typeof createSmtpAdapter> & { inboundPort?: number };
afterAll(() => adapter.stop!());

test("inbound SMTP listener delivers a parsed reply as a message event", async () => {
  await adapter.start!();
  const port = adapter.inboundPort!;
  expect(port).toBeGreaterThan(0);
  await SmtpPeer.deliver({
    port,
    mail: {
      from: '"Ann Lee" <Ann.Lee@Customer.Example>',
      to: "support@shop.example",
      subject: "Re: Your order A123",
      text: "Thanks, got it!",
      html: "<p>Thanks, got it!</p>",
      messageId: "<reply-1@mail.customer.example>",
      inReplyTo: "<0190f0f0-aaaa-7000-8000-000000000001@shop.example>",
      references: ["<0190f0f0-aaaa-7000-8000-000000000001@shop.example>"],
      date: new Date("2026-03-01T12:30:00Z"),
    },
  });
  expect(t.inbound).toHaveLength(1);
  expect(t.inbound[0]).toEqual([
    {
      kind: "message",
      providerMessageId: "<reply-1@mail.customer.example>",
      from: { value: "ann.lee@customer.example", displayName: "Ann Lee" },
      timestamp: new Date("2026-03-01T12:30:00Z"),
      content: { type: "email", email: { subject: "Re: Your order A123", text: "Thanks, got it!", html: "<p>Thanks, got it!</p>" } },
      inReplyTo: "<0190f0f0-aaaa-7000-8000-000000000001@shop.example>",
    },
  ]);
});

test("when storing fails the sender gets 451 (and keeps the mail queued)", async () => {
  const failing = createTestContext({
    provider: "smtp",
    channel: "email",
    settings: { from: "support@shop.example", inbound_smtp_listen: "127.0.0.1:0" },
    onInbound: async () => {
      throw new Error("disk full");
    },
  });
  const b = createSmtpAdapter(failing.ctx) as ReturnType<typeof createSmtpAdapter> & { inboundPort?: number };
  await b.start!();
  try {
    await expect(
      SmtpPeer.deliver({ port: b.inboundPort!, mail: { from: "x@y.example", to: "support@shop.example", subject: "s", text: "t" } }),
    ).rejects.toMatchObject({ responseCode: 451 });
  } finally {
    await b.stop!();
  }
});

test("a bad inbound_smtp_listen value stops start-up", () => {
  const bad = createTestContext({ provider: "smtp", channel: "email", settings: { from: "a@b.example", inbound_smtp_listen: "2525" } });
  expect(() => createSmtpAdapter(bad.ctx)).toThrow(/host:port/);
});
