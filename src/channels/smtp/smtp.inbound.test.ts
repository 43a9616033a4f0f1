/**
 * Hostile inbound mail through the parser the appliance runs (mailparser → @zone-eu/mailsplit, libmime,
 * libqp, encoding-japanese) and emailToEvent. Issue 41 item 15: these libraries read untrusted bytes from
 * anyone who can send mail; this pins what they must do with the versions package-lock.json installs
 * (until 0.3 npm `overrides` pinned older ones than mailparser and imapflow test with). The contract: every
 * message parses without throwing, within a bound, and becomes an event or is skipped (no usable From).
 */
import { expect, test } from "bun:test";
import fc from "fast-check";
import { simpleParser } from "mailparser";
import { emailToEvent } from "./smtp.inbound";

const now = new Date("2026-03-01T12:00:00Z");

async function parse(raw: string | Uint8Array) {
  const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : raw;
  const parsed = await simpleParser(Buffer.from(bytes));
  return { parsed, event: emailToEvent({ parsed, raw: bytes, now }) };
}

const head = (extra = "") => `From: "Ann" <ann@customer.example>\r\nTo: support@shop.example\r\nMessage-ID: <m1@customer.example>\r\n${extra}`;

test("ISO-2022-JP subject and body (encoding-japanese) decode to the text", async () => {
  const { event } = await parse(
    `${head()}Subject: =?ISO-2022-JP?B?GyRCJUYlOSVIGyhC?=\r\nContent-Type: text/plain; charset=ISO-2022-JP\r\nContent-Transfer-Encoding: 7bit\r\n\r\n\x1b$BF|K\\8l$N%a!<%kK\\J8\x1b(B\r\n`,
  );
  expect(event?.kind).toBe("message");
  const email = event?.kind === "message" && event.content.type === "email" ? event.content.email : undefined;
  expect(email?.subject).toBe("テスト");
  expect(email?.text?.trim()).toBe("日本語のメール本文");
});

test("quoted-printable with soft breaks, broken escapes and a dangling '=' (libqp) decodes what it can", async () => {
  const { event } = await parse(
    `${head()}Subject: qp\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nHel=\r\nlo =C3=A9 =ZZ =4 end=`,
  );
  const email = event?.kind === "message" && event.content.type === "email" ? event.content.email : undefined;
  expect(email?.text).toStartWith("Hello é");
});

const hostile: [string, () => string | Uint8Array][] = [
  [
    "a multipart nested 300 deep",
    () => {
      let body = "innermost\r\n";
      for (let i = 300; i > 0; i--) body = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${body}--b${i}--\r\n`;
      return `${head()}Subject: deep\r\n${body}`;
    },
  ],
  [
    "a boundary that never closes",
    () => `${head()}Subject: open\r\nContent-Type: multipart/mixed; boundary="x"\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\nno end`,
  ],
  ["a 200 kB folded header", () => `${head()}Subject: ${"a ".repeat(50_000).replace(/(.{70})/g, "$1\r\n ")}\r\n\r\nbody`],
  ["5,000 headers", () => `${head()}${"X-Junk: y\r\n".repeat(5000)}Subject: many\r\n\r\nbody`],
  ["NUL bytes and invalid UTF-8", () => new Uint8Array([...new TextEncoder().encode(`${head()}Subject: bin\r\n\r\n`), 0, 0xff, 0xfe, 0xc3, 0x28, 0, 0x80])],
  ["an encoded word in an unknown charset", () => `${head()}Subject: =?x-no-such-charset?Q?abc=FF?=\r\n\r\nbody`],
  ["a CR LF encoded into the subject", () => `${head()}Subject: =?UTF-8?Q?a=0D=0ABcc:_x@evil.example?=\r\n\r\nbody`],
  [
    "broken base64 in an attachment",
    () =>
      `${head()}Subject: att\r\nContent-Type: multipart/mixed; boundary="x"\r\n\r\n--x\r\nContent-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n%%%not base64!!==\r\n--x--\r\n`,
  ],
  ["a From with no address", () => `From: <<<@@@>>>\r\nSubject: who\r\n\r\nbody`],
  ["no headers at all", () => "\r\n\r\n"],
  ["an empty message", () => ""],
];

test.each(hostile)("%s: parses without throwing, within 5 s", async (_, make) => {
  const started = performance.now();
  const { event } = await parse(make());
  expect(performance.now() - started).toBeLessThan(5000);
  if (event) {
    expect(event.kind).toBe("message");
    if (event.kind === "message") expect(event.from.value).toBe(event.from.value.toLowerCase());
  }
});

test("property: any bytes after a From header parse, and give an event or none, never a throw", async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 2000 }), fc.string({ maxLength: 200 }), async (tail, text) => {
      const prefix = new TextEncoder().encode(`${head()}${text}\r\n`);
      const raw = new Uint8Array(prefix.length + tail.length);
      raw.set(prefix);
      raw.set(tail, prefix.length);
      const { event } = await parse(raw);
      if (event?.kind === "message") expect(event.providerMessageId.length).toBeGreaterThan(0);
    }),
    { numRuns: 300 },
  );
});
