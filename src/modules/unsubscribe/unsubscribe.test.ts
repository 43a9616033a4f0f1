/**
 * DESIGN §20, RFC 8058 one-click unsubscribe, through the whole path: a template send and a campaign go out
 * through the dispatch and nodemailer to a real SMTP peer (test/fakes/smtp.peer.ts); the received mail's
 * `List-Unsubscribe` URL is then POSTed as a mail client does (`List-Unsubscribe=One-Click`, form-encoded).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { smtpTestApp } from "../../../test/helpers/smtp-app";
import type { TestApp } from "../../../test/helpers/test-app";
import { createCompany } from "../companies/companies.service";
import { createUnsubscribeTokens, deriveUnsubscribeKey } from "./unsubscribe.tokens";

const SMTP_ACCOUNT = "0193a4b2-0000-7000-8000-00000000e0e2";

let app: TestApp;
let smtp: Awaited<ReturnType<typeof smtpTestApp>>;
let templateId: string;

beforeAll(async () => {
  smtp = await smtpTestApp({ accountId: SMTP_ACCOUNT, publicUrl: "https://mail.shop.example/" });
  app = smtp.app;
  const t = await app.request("POST", "/templates", {
    body: {
      channel: "email",
      channelAccountId: SMTP_ACCOUNT,
      name: "news",
      language: "en",
      subject: "News for {{1}}",
      body: "Hi {{1}}. Leave: {{unsubscribe_url}}",
      html: '<p>Hi {{1}}.</p><p><a href="{{unsubscribe_url}}">Unsubscribe</a></p>',
    },
  });
  expect(t.status).toBe(201);
  templateId = t.body.data.id;
});
afterAll(() => smtp.close());

const received = (to: string, nth = 1) => smtp.received(to, nth);

/** The one-click URL of a received mail, checked against RFC 8058's two headers in the raw bytes. */
function oneClickUrl(mail: Awaited<ReturnType<typeof received>>): string {
  const raw = mail.raw.toString("utf8").replace(/\r\n[ \t]+/g, " ");
  const lu = raw.match(/^List-Unsubscribe: <([^>]+)>\r?$/im);
  expect(lu).not.toBeNull();
  expect(raw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click\r?$/im);
  const url = lu![1]!;
  expect(url).toMatch(/^https:\/\/mail\.shop\.example\/u\/[A-Za-z0-9_-]{60,100}$/);
  return url;
}

const hit = (method: "GET" | "POST", url: string) =>
  app.app.handle(
    new Request(
      url,
      method === "POST" ? { method, headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" } : { method },
    ),
  );

const emailConsent = async (contactId: string) => (await app.request("GET", `/contacts/${contactId}`)).body.data.consent.email?.status;
const optedOutEvents = (contactId: string) => app.emitted.filter((e) => e.type === "contact.opted_out" && (e.data as any).contact.id === contactId);

describe("a template e-mail", () => {
  let url: string;
  let contactId: string;

  test("carries List-Unsubscribe and List-Unsubscribe-Post, and {{unsubscribe_url}} renders in both parts", async () => {
    const res = await app.request("POST", "/messages", {
      body: { channel: "email", to: { email: "ann@example.com" }, type: "template", template: { templateId, params: { "body.1": "Ann" } } },
    });
    expect(res.status).toBe(202);
    contactId = res.body.data.contactId;
    const mail = await received("ann@example.com");
    url = oneClickUrl(mail);
    expect(mail.parsed.text?.trim()).toBe(`Hi Ann. Leave: ${url}`);
    expect(mail.parsed.html).toBe(`<p>Hi Ann.</p><p><a href="${url}">Unsubscribe</a></p>`);
  });

  test("GET shows a page whose one button POSTs, under a strict CSP, and changes nothing", async () => {
    const before = await emailConsent(contactId);
    const res = await hit("GET", url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/html");
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).not.toContain("script-src");
    const html = await res.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain('name="List-Unsubscribe" value="One-Click"');
    expect(html).not.toContain("<script");
    expect(await emailConsent(contactId)).toBe(before);
    expect(before).not.toBe("opted_out");
    expect(optedOutEvents(contactId)).toHaveLength(0);
  });

  test("POST (what a mail client sends) opts the contact out of e-mail with source campaign_unsubscribe, once", async () => {
    const res = await hit("POST", url);
    expect(res.status).toBe(200);
    expect(await emailConsent(contactId)).toBe("opted_out");
    const events = optedOutEvents(contactId);
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({ channel: "email", source: "campaign_unsubscribe" });

    const again = await hit("POST", url);
    expect(again.status).toBe(200);
    expect(optedOutEvents(contactId)).toHaveLength(1);
  });
});

describe("a campaign e-mail", () => {
  test("carries a working one-click URL, and the next campaign excludes who used it", async () => {
    for (const email of ["bob@example.com", "carol@example.com"]) {
      const c = await app.request("POST", "/contacts", { body: { identities: [{ channel: "email", value: email }], tags: ["news"], optIn: true } });
      expect(c.status).toBeLessThan(300);
    }
    const first = await app.request("POST", "/campaigns", {
      body: { name: "first", templateId, audience: { type: "tags", tags: ["news"] }, askValues: { "body.1": "friend" } },
    });
    expect(first.status).toBeLessThan(300);
    const mail = await received("bob@example.com");
    await received("carol@example.com");
    const url = oneClickUrl(mail);
    expect(mail.parsed.text).toContain(url);
    expect(url.split("/u/")[1]).toHaveLength(88); // names the campaign too

    const res = await hit("POST", url);
    expect(res.status).toBe(200);
    const bob = (await app.request("GET", "/contacts?limit=200")).body.data.find((c: any) => c.identities.some((i: any) => i.value === "bob@example.com"));
    expect(bob.consent.email.status).toBe("opted_out");
    expect(optedOutEvents(bob.id)).toHaveLength(1);

    const second = await app.request("POST", "/campaigns", {
      body: { name: "second", templateId, audience: { type: "tags", tags: ["news"] }, askValues: { "body.1": "friend" } },
    });
    expect(second.status).toBeLessThan(300);
    await received("carol@example.com", 2);
    const stats = (await app.request("GET", `/campaigns/${second.body.data.id}`)).body.data.stats;
    expect(stats.excluded.noConsent).toBe(1);
    expect(smtp.peer.messages.filter((m) => m.envelope.to.includes("bob@example.com"))).toHaveLength(1);
  });
});

describe("a token that is not ours", () => {
  let url: string;
  let contactId: string;
  beforeAll(async () => {
    const res = await app.request("POST", "/messages", {
      body: { channel: "email", to: { email: "dan@example.com" }, type: "template", template: { templateId, params: { "body.1": "Dan" } } },
    });
    contactId = res.body.data.contactId;
    url = oneClickUrl(await received("dan@example.com"));
  });

  const variants = async (): Promise<[string, string][]> => {
    const token = url.slice(url.lastIndexOf("/") + 1);
    const base = url.slice(0, url.lastIndexOf("/") + 1);
    const other = (await createCompany({ db: app.deps.db, now: app.deps.now, slug: `other-${Date.now()}`, name: "Other" })).company;
    const bytes = Buffer.from(token, "base64url");
    Buffer.from(other.id.replace(/-/g, ""), "hex").copy(bytes, 2); // the company's 16 bytes, MAC left as it was
    const foreignKey = createUnsubscribeTokens({ keys: new Map([[1, deriveUnsubscribeKey(randomBytes(32).toString("base64url"), 1)]]), current: 1 });
    const flip = (i: number) => token.slice(0, i) + (token[i] === "A" ? "B" : "A") + token.slice(i + 1);
    return [
      ["one character changed (MAC)", base + flip(token.length - 3)],
      ["one character changed (ids)", base + flip(20)],
      ["another company's", base + bytes.toString("base64url")],
      ["truncated by one", base + token.slice(0, -1)],
      ["truncated to the ids", base + token.slice(0, 46)],
      ["signed by another appliance", base + foreignKey.sign({ companyId: app.company.id, contactId, channel: "email" })],
      ["the bare contact id", base + contactId],
      ["garbage", `${base}not-a-token!`],
    ];
  };

  test("is 404 on GET and POST and changes nothing", async () => {
    for (const [name, bad] of await variants()) {
      for (const method of ["GET", "POST"] as const) {
        const res = await hit(method, bad);
        expect({ name, method, status: res.status }).toEqual({ name, method, status: 404 });
      }
    }
    expect(await emailConsent(contactId)).not.toBe("opted_out");
    expect(optedOutEvents(contactId)).toHaveLength(0);
    // The genuine one still works.
    expect((await hit("POST", url)).status).toBe(200);
    expect(await emailConsent(contactId)).toBe("opted_out");
  });

  test("is not in the OpenAPI document", async () => {
    const doc = (await app.request("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/u/"))).toEqual([]);
  });
});

describe("tokens", () => {
  const key = (v: number) => deriveUnsubscribeKey(randomBytes(32).toString("base64url"), v);
  const ref = { companyId: "0193a4b2-0000-7000-8000-000000000001", contactId: "0193a4b2-0000-7000-8000-000000000002", channel: "email" as const };

  test("round-trip with and without a campaign; compact base64url", () => {
    const tokens = createUnsubscribeTokens({ keys: new Map([[1, key(1)]]), current: 1 });
    const a = tokens.sign(ref)!;
    const b = tokens.sign({ ...ref, campaignId: "0193a4b2-0000-7000-8000-000000000003" })!;
    expect(a).toMatch(/^[A-Za-z0-9_-]{67}$/);
    expect(b).toMatch(/^[A-Za-z0-9_-]{88}$/);
    expect(tokens.verify(a)).toEqual(ref);
    expect(tokens.verify(b)).toEqual({ ...ref, campaignId: "0193a4b2-0000-7000-8000-000000000003" });
    expect(a).not.toContain(ref.contactId.replace(/-/g, ""));
    expect(tokens.sign({ ...ref, contactId: "not-a-uuid" })).toBeUndefined();
  });

  test("rotation: a new current version signs, the old one verifies until it is dropped", () => {
    const k1 = key(1);
    const k2 = key(2);
    const old = createUnsubscribeTokens({ keys: new Map([[1, k1]]), current: 1 }).sign(ref)!;
    const rotated = createUnsubscribeTokens({
      keys: new Map([
        [1, k1],
        [2, k2],
      ]),
      current: 2,
    });
    const fresh = rotated.sign(ref)!;
    expect(Buffer.from(fresh, "base64url")[0]).toBe(2);
    expect(rotated.verify(old)).toEqual(ref);
    expect(rotated.verify(fresh)).toEqual(ref);
    const dropped = createUnsubscribeTokens({ keys: new Map([[2, k2]]), current: 2 });
    expect(dropped.verify(old)).toBeUndefined();
    expect(dropped.verify(fresh)).toEqual(ref);
  });
});

describe("rate limit", () => {
  // Last in the file: it empties the bucket of the test client's address ("unknown": app.handle has no socket).
  test("per client address: past the burst 429 with Retry-After; it refills", async () => {
    const url = "https://mail.shop.example/u/AAAA";
    let limited: Response | undefined;
    for (let i = 0; i < 300 && !limited; i++) {
      const res = await hit("POST", url);
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(404);
    }
    expect(limited?.headers.get("retry-after")).toBe("1");
    (app.clock as unknown as { advance(ms: number): void }).advance(1000);
    expect((await hit("GET", url)).status).toBe(404);
  });
});
