/** Pure parts of webhooks: schedule, Retry-After, subscriptions, URL policy with DNS, signing vs the reference library. */
import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { MAX_ATTEMPTS, parseRetryAfter, postPinned, retryDelayMs, RETRY_SCHEDULE_MS } from "./webhooks.delivery";
import { activeSecrets, generateSecret, sign, signedHeaders } from "./webhooks.signing";
import { compileMatcher, subscriptionProblem } from "./webhooks.subscriptions";
import { createUrlPolicy } from "./webhooks.url-policy";

describe("retry schedule", () => {
  test("Svix delays with ±10 % jitter, 8 attempts in all", () => {
    expect(RETRY_SCHEDULE_MS).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(MAX_ATTEMPTS).toBe(8);
    RETRY_SCHEDULE_MS.forEach((base, i) => {
      expect(retryDelayMs(i + 1, () => 0)).toBe(Math.round(base * 0.9));
      expect(retryDelayMs(i + 1, () => 0.5)).toBe(base);
      expect(retryDelayMs(i + 1, () => 0.999999)).toBeLessThanOrEqual(Math.round(base * 1.1));
    });
    expect(retryDelayMs(8)).toBeNull();
  });

  test("Retry-After: delta seconds, HTTP date, junk, cap 24 h", () => {
    const now = new Date("2025-06-01T10:00:00Z");
    expect(parseRetryAfter("30", now)).toBe(30_000);
    expect(parseRetryAfter("Sun, 01 Jun 2025 10:05:00 GMT", now)).toBe(300_000);
    expect(parseRetryAfter("Sun, 01 Jun 2025 09:05:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
    expect(parseRetryAfter("999999", now)).toBe(24 * 3600_000);
  });
});

describe("subscriptions", () => {
  test("names, prefix patterns and * against the catalogue", () => {
    expect(subscriptionProblem("message.sent")).toBeNull();
    expect(subscriptionProblem("message.*")).toBeNull();
    expect(subscriptionProblem("webhook.*")).toBeNull();
    expect(subscriptionProblem("*")).toBeNull();
    expect(subscriptionProblem("message.exploded")).toContain("unknown event type");
    expect(subscriptionProblem("billing.*")).toContain("no event type matches");
    expect(subscriptionProblem("message*")).toContain("must be");
    expect(subscriptionProblem("*.sent")).toContain("must be");
    expect(subscriptionProblem("Message.Sent")).toContain("must be");
  });

  test("matching", () => {
    const m = compileMatcher(["message.*", "contact.created"]);
    expect(m("message.sent")).toBe(true);
    expect(m("contact.created")).toBe(true);
    expect(m("contact.updated")).toBe(false);
    expect(m("messages.sent")).toBe(false);
    expect(compileMatcher(["*"])("anything.at_all")).toBe(true);
  });
});

/** The problem an attempt would be refused with, or null (the addresses it would connect to are checked below). */
async function problemBeforeSend(policy: ReturnType<typeof createUrlPolicy>, url: string): Promise<string | null> {
  const checked = await policy.addressesBeforeSend(url);
  return "problem" in checked ? checked.problem : null;
}

describe("URL policy", () => {
  const dns = (table: Record<string, string[]>) => async (host: string) => {
    const ips = table[host];
    if (!ips) throw new Error("ENOTFOUND");
    return ips;
  };

  test("private networks allowed by default (on-prem)", async () => {
    const p = createUrlPolicy({ allow_private_networks: true, allow: [], deny: [] }, dns({ "erp.local": ["10.0.0.5"] }));
    expect(p.check("http://127.0.0.1:8080/x")).toBeNull();
    expect(p.check("http://erp.local/x")).toBeNull();
    expect(await problemBeforeSend(p, "http://erp.local/x")).toBeNull();
  });

  test("link-local and metadata services are refused by default, in every form, unless [webhooks] allow lists them (issue 34 row 5)", async () => {
    const p = createUrlPolicy(
      { allow_private_networks: true, allow: [], deny: [] },
      dns({ "imds.example.com": ["169.254.169.254"], "v6.example.com": ["fe80::1"] }),
    );
    for (const url of [
      "http://169.254.169.254/latest/meta-data/",
      "http://[::ffff:169.254.169.254]/",
      "http://[::ffff:a9fe:a9fe]/",
      "http://[fe80::1]/",
      "http://metadata.google.internal/",
      "http://metadata.google.internal./",
      "http://100.100.100.200/",
    ])
      expect(p.check(url)).toMatch(/link-local|metadata/);
    expect(p.check("https://imds.example.com/h")).toBeNull(); // a name: decided once resolved
    expect(await problemBeforeSend(p, "https://imds.example.com/h")).toContain("imds.example.com (169.254.169.254) is a link-local address");
    expect(await problemBeforeSend(p, "https://v6.example.com/h")).toContain("link-local");
    const listed = createUrlPolicy({ allow_private_networks: true, allow: ["169.254.0.0/16", "metadata.google.internal"], deny: [] });
    expect(listed.check("http://169.254.169.254/x")).toBeNull();
    expect(listed.check("http://metadata.google.internal/x")).toBeNull();
  });

  test("a name resolving to a private address is refused before sending when private networks are off", async () => {
    const p = createUrlPolicy(
      { allow_private_networks: false, allow: [], deny: [] },
      dns({ "rebind.example.com": ["93.184.216.34", "10.0.0.7"], "ok.example.com": ["93.184.216.34"] }),
    );
    expect(p.check("https://rebind.example.com/h")).toBeNull();
    expect(await problemBeforeSend(p, "https://rebind.example.com/h")).toContain("private network");
    expect(await problemBeforeSend(p, "https://ok.example.com/h")).toBeNull();
    expect(await problemBeforeSend(p, "https://missing.example.com/h")).toContain("cannot resolve");
    expect(p.check("http://[::ffff:127.0.0.1]/h")).toContain("private network");
    expect(p.check("http://100.64.0.1/h")).toContain("private network");
  });

  test("deny and allow CIDRs apply to resolved addresses", async () => {
    const p = createUrlPolicy(
      { allow_private_networks: true, allow: ["10.20.0.0/16", "*.corp.example"], deny: ["10.20.99.0/24"] },
      dns({ "erp.lan": ["10.20.1.1"], "bad.lan": ["10.20.99.5"], "web.lan": ["8.8.8.8"] }),
    );
    expect(await problemBeforeSend(p, "http://erp.lan/h")).toBeNull();
    expect(await problemBeforeSend(p, "http://bad.lan/h")).toContain("deny");
    expect(await problemBeforeSend(p, "http://web.lan/h")).toContain("allow");
    expect(p.check("https://x.corp.example/h")).toBeNull();
  });
});

describe("an attempt connects to the addresses that were checked", () => {
  test("a name is resolved once, by the policy; the POST goes to that address with the name as Host (no second lookup to rebind)", async () => {
    const seen: { host: string | null; body: string }[] = [];
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: async (req) => (seen.push({ host: req.headers.get("host"), body: await req.text() }), new Response("ok")),
    });
    try {
      // hooks.rebind.test exists in no DNS: only the policy's resolver knows it, so a delivery that looked it up
      // again could not connect at all.
      const policy = createUrlPolicy({ allow_private_networks: true, allow: [], deny: [] }, async (host) =>
        host === "hooks.rebind.test" ? ["127.0.0.1"] : Promise.reject(new Error("ENOTFOUND")),
      );
      const url = `http://hooks.rebind.test:${server.port}/in`;
      const checked = await policy.addressesBeforeSend(url);
      expect(checked).toEqual({ addresses: ["127.0.0.1"] });
      if (!("addresses" in checked)) throw new Error("refused");
      const res = await postPinned({
        fetchImpl: fetch,
        url: new URL(url),
        addresses: checked.addresses,
        init: { method: "POST", headers: { "content-type": "application/json" }, body: "{}", redirect: "manual" },
      });
      expect(res.status).toBe(200);
      expect(seen).toEqual([{ host: `hooks.rebind.test:${server.port}`, body: "{}" }]);
      const refused = createUrlPolicy({ allow_private_networks: true, allow: [], deny: [] }, async () => ["169.254.169.254"]);
      expect(await refused.addressesBeforeSend(url)).toEqual({ problem: expect.stringContaining("link-local") });
    } finally {
      server.stop(true);
    }
  });
});

describe("signing", () => {
  test("matches the reference library for the same secret, id, timestamp and body", () => {
    const secret = generateSecret();
    const at = new Date("2025-06-01T10:00:00Z");
    const body = '{"type":"message.sent","timestamp":"2025-06-01T10:00:00.000Z","data":{"x":"é"}}';
    expect(sign({ secret, id: "msg_1", timestamp: Math.floor(at.getTime() / 1000), body })).toBe(new Webhook(secret).sign("msg_1", at, body));
  });

  test("two secrets → two space-separated signatures; previous secret only inside its window", () => {
    const h = signedHeaders({ secrets: [generateSecret(), generateSecret()], id: "m", at: new Date(), body: "{}" });
    expect(h["webhook-signature"]!.split(" ")).toHaveLength(2);
    const now = new Date("2025-06-01T10:00:00Z");
    const e = { secret: "new", previousSecret: "old", previousSecretExpiresAt: new Date(now.getTime() + 1) };
    expect(activeSecrets(e, now)).toEqual(["new", "old"]);
    expect(activeSecrets({ ...e, previousSecretExpiresAt: now }, now)).toEqual(["new"]);
  });
});
