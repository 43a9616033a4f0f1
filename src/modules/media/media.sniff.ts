/**
 * Content sniffing: the type the first bytes of a file say it is, for the common image, video, audio and
 * PDF formats, and whether a declared Content-Type agrees with it. Formats without reliable magic bytes
 * (text, CSV, Office documents, ...) are not sniffed: their declared type is taken as is.
 */

/** How many leading bytes `sniffMime` needs. */
export const SNIFF_BYTES = 64;

const ascii = (b: Uint8Array, at: number, s: string) => {
  if (b.length < at + s.length) return false;
  for (let i = 0; i < s.length; i++) if (b[at + i] !== s.charCodeAt(i)) return false;
  return true;
};

/** The mime type the bytes say, or undefined for formats we do not recognise. */
export function sniffMime(head: Uint8Array): string | undefined {
  const b = head;
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return "image/jpeg";
  if (b.length >= 8 && b[0] === 0x89 && ascii(b, 1, "PNG\r\n\x1a\n")) return "image/png";
  if (ascii(b, 0, "GIF87a") || ascii(b, 0, "GIF89a")) return "image/gif";
  if (ascii(b, 0, "RIFF") && ascii(b, 8, "WEBP")) return "image/webp";
  if (ascii(b, 0, "%PDF-")) return "application/pdf";
  if (ascii(b, 4, "ftyp")) {
    const brand = String.fromCharCode(...b.slice(8, 12));
    if (brand === "qt  ") return "video/quicktime";
    if (brand.startsWith("3g2")) return "video/3gpp2";
    if (brand.startsWith("3gp")) return "video/3gpp";
    if (brand === "M4A " || brand === "M4B ") return "audio/mp4";
    if (brand === "heic" || brand === "heix" || brand === "mif1" || brand === "msf1") return "image/heic";
    if (brand === "avif" || brand === "avis") return "image/avif";
    return "video/mp4";
  }
  if (b.length >= 4 && b[0] === 0x1a && b[1] === 0x45 && b[2] === 0xdf && b[3] === 0xa3) return "video/webm";
  if (ascii(b, 0, "OggS")) return "audio/ogg";
  if (ascii(b, 0, "#!AMR")) return "audio/amr";
  if (ascii(b, 0, "ID3")) return "audio/mpeg";
  if (b.length >= 2 && b[0] === 0xff) {
    if ((b[1]! & 0xf6) === 0xf0) return "audio/aac"; // ADTS
    if ((b[1]! & 0xe0) === 0xe0 && (b[1]! & 0x06) !== 0) return "audio/mpeg"; // MPEG audio frame sync
  }
  return undefined;
}

/**
 * Types sharing one container signature: a declared type agrees with a sniffed one when both are in
 * the same family (an .m4a and an .mp4 both start with an `ftyp` box; webm audio and video share EBML).
 */
const FAMILIES: string[][] = [
  ["image/jpeg"],
  ["image/png"],
  ["image/gif"],
  ["image/webp"],
  ["application/pdf"],
  [
    "video/mp4",
    "video/quicktime",
    "video/3gpp",
    "video/3gpp2",
    "video/x-m4v",
    "audio/mp4",
    "audio/x-m4a",
    "audio/m4a",
    "audio/3gpp",
    "image/heic",
    "image/heif",
    "image/avif",
  ],
  ["video/webm", "audio/webm", "video/x-matroska", "audio/x-matroska"],
  ["audio/ogg", "video/ogg", "application/ogg", "audio/opus"],
  ["audio/amr"],
  ["audio/mpeg", "audio/mp3", "audio/aac", "audio/aacp"],
];
const familyOf = new Map<string, number>();
FAMILIES.forEach((f, i) => f.forEach((m) => familyOf.set(m, i)));

/** Spellings browsers and tools send for the same type. */
const ALIASES: Record<string, string> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "audio/mp3": "audio/mpeg",
  "audio/x-mpeg": "audio/mpeg",
  "audio/x-wav": "audio/wav",
  "application/x-pdf": "application/pdf",
};

/** `Image/JPG; charset=x` → `image/jpeg`; empty string for nothing useful. */
export function normaliseMime(declared: string | undefined): string {
  const m = (declared ?? "").split(";")[0]!.trim().toLowerCase();
  return ALIASES[m] ?? m;
}

/** True when we have a signature for this type, so content that lacks it contradicts the declaration. */
export function isSniffable(mime: string): boolean {
  return familyOf.has(mime);
}

export type MimeDecision = { ok: true; mimeType: string } | { ok: false; message: string };

/**
 * The type to store for a file: the declared one when the content agrees with it, the sniffed one when
 * nothing useful was declared. A declared type the content contradicts is refused.
 */
export function decideMime({ declared, head }: { declared: string | undefined; head: Uint8Array }): MimeDecision {
  const d = normaliseMime(declared);
  const sniffed = sniffMime(head);
  if (!d || d === "application/octet-stream") return { ok: true, mimeType: sniffed ?? "application/octet-stream" };
  if (!/^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(d)) return { ok: false, message: `declared content type "${declared}" is not a mime type` };
  if (sniffed) {
    if (familyOf.get(d) === familyOf.get(sniffed)) return { ok: true, mimeType: d };
    return { ok: false, message: `declared as ${d} but the content is ${sniffed}` };
  }
  if (isSniffable(d)) return { ok: false, message: `declared as ${d} but the content is not a ${d} file` };
  return { ok: true, mimeType: d };
}
