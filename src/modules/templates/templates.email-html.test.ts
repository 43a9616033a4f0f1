/**
 * DESIGN §23: template parameters and contact values are HTML-escaped in the HTML part of an e-mail and go
 * as they are into the plain-text part — checked on mail a real SMTP peer received (test/fakes/smtp.peer.ts),
 * sent through the whole path: POST /templates, POST /messages or a campaign, the dispatch job, nodemailer.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { smtpTestApp } from "../../../test/helpers/smtp-app";
import type { TestApp } from "../../../test/helpers/test-app";

const SMTP_ACCOUNT = "0193a4b2-0000-7000-8000-00000000e0e1";
const SCRIPT = "<script>alert(1)</script>";

let app: TestApp;
let smtp: Awaited<ReturnType<typeof smtpTestApp>>;
let templateId: string;

beforeAll(async () => {
  smtp = await smtpTestApp({ accountId: SMTP_ACCOUNT });
  app = smtp.app;
  const t = await app.request("POST", "/templates", {
    body: {
      channel: "email",
      channelAccountId: SMTP_ACCOUNT,
      name: "greeting",
      language: "en",
      subject: "Hello {{1}}",
      body: "Hi {{1}}, about {{2}}.",
      html: '<p title="{{2}}">Hi <b>{{1}}</b>, about {{2}}.</p>',
    },
  });
  expect(t.status).toBe(201);
  templateId = t.body.data.id;
});
afterAll(() => smtp.close());

const received = async (to: string) => (await smtp.received(to)).parsed;

test("a template param arrives HTML-escaped in the HTML part and unchanged in the text part", async () => {
  const quote = `"Tom & Jerry's" <b>`;
  const res = await app.request("POST", "/messages", {
    body: { channel: "email", to: { email: "ann@example.com" }, type: "template", template: { templateId, params: { "body.1": SCRIPT, "body.2": quote } } },
  });
  expect(res.status).toBe(202);
  const mail = await received("ann@example.com");
  expect(mail.html).toBe(
    '<p title="&quot;Tom &amp; Jerry&#39;s&quot; &lt;b&gt;">Hi <b>&lt;script&gt;alert(1)&lt;/script&gt;</b>, about &quot;Tom &amp; Jerry&#39;s&quot; &lt;b&gt;.</p>',
  );
  expect(mail.html).not.toContain("<script>");
  expect(mail.text?.trim()).toBe(`Hi ${SCRIPT}, about ${quote}.`);
  expect(mail.subject).toBe(`Hello ${SCRIPT}`);
});

test("a campaign's contact value (first name) arrives HTML-escaped in the HTML part", async () => {
  const contact = await app.request("POST", "/contacts", {
    body: { identities: [{ channel: "email", value: "bob@example.com" }], tags: ["html"], optIn: true, firstName: '<img src=x onerror="alert(1)">' },
  });
  expect(contact.status).toBeLessThan(300);
  const c = await app.request("POST", "/campaigns", {
    body: { name: "html", templateId, audience: { type: "tags", tags: ["html"] }, askValues: { "body.1": "{{contact.firstName}}", "body.2": "your order" } },
  });
  expect(c.status).toBeLessThan(300);
  const mail = await received("bob@example.com");
  expect(mail.html).toBe('<p title="your order">Hi <b>&lt;img src=x onerror=&quot;alert(1)&quot;&gt;</b>, about your order.</p>');
  expect(mail.text?.trim()).toBe('Hi <img src=x onerror="alert(1)">, about your order.');
});
