import { describe, expect, test } from "bun:test";
import { decideMime, normaliseMime, sniffMime } from "./media.sniff";

const bytes = (...parts: (string | number[])[]) => new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...p].map((c) => c.charCodeAt(0)) : p)));

describe("sniffMime", () => {
  test.each([
    [bytes([0xff, 0xd8, 0xff, 0xe1]), "image/jpeg"],
    [bytes([0x89], "PNG\r\n\x1a\n"), "image/png"],
    [bytes("GIF89a"), "image/gif"],
    [bytes("RIFF", [0, 0, 0, 0], "WEBPVP8 "), "image/webp"],
    [bytes("%PDF-1.7"), "application/pdf"],
    [bytes([0, 0, 0, 0x20], "ftypisom"), "video/mp4"],
    [bytes([0, 0, 0, 0x14], "ftypqt  "), "video/quicktime"],
    [bytes([0, 0, 0, 0x14], "ftyp3gp4"), "video/3gpp"],
    [bytes([0, 0, 0, 0x20], "ftypM4A "), "audio/mp4"],
    [bytes([0x1a, 0x45, 0xdf, 0xa3]), "video/webm"],
    [bytes("OggS"), "audio/ogg"],
    [bytes("#!AMR\n"), "audio/amr"],
    [bytes("ID3", [4, 0]), "audio/mpeg"],
    [bytes([0xff, 0xfb, 0x90]), "audio/mpeg"],
    [bytes([0xff, 0xf1, 0x50]), "audio/aac"],
    [bytes("hello"), undefined],
    [bytes("PK", [3, 4]), undefined],
  ])("%#: %s", (b, mime) => {
    expect(sniffMime(b)).toBe(mime);
  });
});

describe("decideMime", () => {
  const png = bytes([0x89], "PNG\r\n\x1a\n");
  test("agreeing, aliased and family types are kept as declared", () => {
    expect(decideMime({ declared: "image/png", head: png })).toEqual({ ok: true, mimeType: "image/png" });
    expect(decideMime({ declared: "IMAGE/JPG; q=1", head: bytes([0xff, 0xd8, 0xff]) })).toEqual({ ok: true, mimeType: "image/jpeg" });
    expect(decideMime({ declared: "audio/mp4", head: bytes([0, 0, 0, 0x20], "ftypisom") })).toEqual({ ok: true, mimeType: "audio/mp4" });
  });
  test("nothing declared → sniffed, else octet-stream", () => {
    expect(decideMime({ declared: "", head: png })).toEqual({ ok: true, mimeType: "image/png" });
    expect(decideMime({ declared: "application/octet-stream", head: bytes("x") })).toEqual({ ok: true, mimeType: "application/octet-stream" });
  });
  test("contradictions are refused", () => {
    expect(decideMime({ declared: "image/jpeg", head: png }).ok).toBe(false);
    expect(decideMime({ declared: "text/plain", head: png }).ok).toBe(false);
    expect(decideMime({ declared: "video/mp4", head: bytes("not a video") }).ok).toBe(false);
    expect(decideMime({ declared: "not a type", head: bytes("x") }).ok).toBe(false);
  });
  test("unsniffable declared types pass", () => {
    expect(decideMime({ declared: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", head: bytes("PK", [3, 4]) }).ok).toBe(true);
    expect(normaliseMime(" Text/Plain ; charset=utf-8")).toBe("text/plain");
  });
});
