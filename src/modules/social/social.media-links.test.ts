import { describe, expect, test } from "bun:test";
import { createMediaLinks, isPublicUrl } from "./social.media-links";

describe("media links", () => {
  test("a link verifies for its company, media and time only; the secret is made once and kept", async () => {
    const kv = new Map<string, string>();
    const store = { read: async (k: string) => kv.get(k), write: async (k: string, v: string) => void kv.set(k, v) };
    let t = new Date("2026-01-01T00:00:00Z");
    const links = createMediaLinks({ store, publicUrl: "https://sb.example.com/", now: () => t });
    const url = new URL(await links.link("c1", "m1"));
    expect(url.pathname).toBe("/hooks/social-media/c1/m1");
    const exp = url.searchParams.get("exp")!;
    const sig = url.searchParams.get("sig")!;
    expect(await links.verify("c1", "m1", exp, sig)).toBe(true);
    expect(await links.verify("c2", "m1", exp, sig)).toBe(false);
    expect(await links.verify("c1", "m2", exp, sig)).toBe(false);
    expect(await links.verify("c1", "m1", String(Number(exp) + 3600), sig)).toBe(false);
    expect(await links.verify("c1", "m1", exp, undefined)).toBe(false);
    // After a restart (a new instance on the same store) old links still verify.
    expect(await createMediaLinks({ store, publicUrl: "https://sb.example.com", now: () => t }).verify("c1", "m1", exp, sig)).toBe(true);
    t = new Date(t.getTime() + 25 * 3_600_000);
    expect(await links.verify("c1", "m1", exp, sig)).toBe(false);
    expect(kv.size).toBe(1);
  });

  const cases: [string, boolean][] = [
    ["https://switchboard.example.com", true],
    ["http://203.0.113.7:8080", true],
    ["http://localhost:8080", false],
    ["http://127.0.0.1:8080", false],
    ["http://10.1.2.3", false],
    ["http://172.20.0.1", false],
    ["http://192.168.1.10", false],
    ["http://switchboard.local", false],
    ["http://switchboard", false],
    ["http://[::1]:8080", false],
    ["http://[fd00::1]", false],
  ];
  for (const [url, expected] of cases) test(`isPublicUrl(${url}) = ${expected}`, () => expect(isPublicUrl(url)).toBe(expected));
});
