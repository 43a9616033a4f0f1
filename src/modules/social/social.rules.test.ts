/** The platform rules table as pure checks. */
import { describe, expect, test } from "bun:test";
import { checkContent, kindOfUrl, xLength } from "./social.rules";

describe("X weighted length", () => {
  const cases: [string, number][] = [
    ["hello", 5],
    ["héllo wörld", 11],
    ["https://example.com/a/very/long/path/that/goes/on", 23],
    ["see https://a.io and http://b.io", 4 + 23 + 5 + 23],
    ["日本語", 6],
    ["😀", 2],
    ["—", 1], // U+2014 em dash is in the light range
  ];
  for (const [text, n] of cases) test(JSON.stringify(text), () => expect(xLength(text)).toBe(n));

  test("280 weighted characters pass, 281 do not; 140 CJK characters are the limit", () => {
    const ok = (text: string) => checkContent({ platform: "x", text, media: [], textPointer: "/text", mediaPointer: "/media" }).length === 0;
    expect(ok("a".repeat(280))).toBe(true);
    expect(ok("a".repeat(281))).toBe(false);
    expect(ok("語".repeat(140))).toBe(true);
    expect(ok("語".repeat(141))).toBe(false);
  });
});

describe("media rules", () => {
  const img = { url: "u", kind: "image" as const };
  const vid = { url: "u", kind: "video" as const };
  const problems = (platform: "instagram" | "facebook" | "x" | "tiktok", media: (typeof img | typeof vid)[]) =>
    checkContent({ platform, text: "", media, textPointer: "/text", mediaPointer: "/overrides/a/media" }).map((p) => p.pointer);
  const cases: [string, "instagram" | "facebook" | "x" | "tiktok", (typeof img)[] | (typeof vid)[] | (typeof img | typeof vid)[], number][] = [
    ["instagram needs media", "instagram", [], 1],
    ["instagram 10 images", "instagram", Array(10).fill(img), 0],
    ["instagram 11 images", "instagram", Array(11).fill(img), 1],
    ["instagram one video", "instagram", [vid], 0],
    ["instagram two videos", "instagram", [vid, vid], 1],
    ["facebook text only", "facebook", [], 0],
    ["facebook video", "facebook", [vid], 1],
    ["x 4 images", "x", Array(4).fill(img), 0],
    ["x 5 images", "x", Array(5).fill(img), 1],
    ["x video and image", "x", [vid, img], 1],
    ["tiktok one video", "tiktok", [vid], 0],
    ["tiktok video and image", "tiktok", [vid, img], 1],
    ["tiktok nothing", "tiktok", [], 1],
  ];
  for (const [name, platform, media, n] of cases)
    test(name, () => {
      const got = problems(platform, media);
      expect(got).toHaveLength(n);
      for (const p of got) expect(p).toBe("/overrides/a/media");
    });

  test("URL kinds", () => {
    expect(kindOfUrl("https://x.io/a.MP4?sig=1")).toBe("video");
    expect(kindOfUrl("https://x.io/a.jpg")).toBe("image");
    expect(kindOfUrl("not a url.mov")).toBe("video");
  });
});
