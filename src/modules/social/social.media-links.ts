/**
 * Signed, expiring public links to media uploaded through POST /media, for platforms that pull media from a
 * URL instead of taking an upload (Instagram). `GET /hooks/social-media/{companyId}/{mediaId}?exp=&sig=`
 * serves the bytes without an API key; `sig` is HMAC-SHA256 over "companyId.mediaId.exp" with a random secret kept in the
 * database (adapter_state, account "social"), so links survive restarts and cannot be forged or extended.
 *
 * NB! Only useful when `[server] public_url` is reachable from the internet; `isPublicUrl` tells the
 * rules whether it can be (a loopback or private address cannot).
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

export interface SecretStore {
  read(key: string): Promise<string | undefined>;
  write(key: string, value: string): Promise<void>;
}

/** How long a link works: Instagram containers live 24 h. */
export const MEDIA_LINK_TTL_MS = 24 * 3_600_000;
export const MEDIA_LINK_PATH = "/hooks/social-media";

export function createMediaLinks({ store, publicUrl, now }: { store: SecretStore; publicUrl: string; now: () => Date }) {
  // NB! The promise is kept, not the value: two first calls at once must not each make (and store) a secret.
  let secret: Promise<string> | undefined;
  const load = async () => {
    const stored = await store.read("media_link_secret");
    if (stored) return stored;
    const made = randomBytes(32).toString("base64url");
    await store.write("media_link_secret", made);
    return made;
  };
  const key = () => (secret ??= load().catch((e) => ((secret = undefined), Promise.reject(e))));
  const sign = async (companyId: string, mediaId: string, exp: number) =>
    createHmac("sha256", await key())
      .update(`${companyId}.${mediaId}.${exp}`)
      .digest("base64url");
  return {
    async link(companyId: string, mediaId: string): Promise<string> {
      const exp = Math.floor((now().getTime() + MEDIA_LINK_TTL_MS) / 1000);
      return `${publicUrl.replace(/\/+$/, "")}${MEDIA_LINK_PATH}/${encodeURIComponent(companyId)}/${encodeURIComponent(mediaId)}?exp=${exp}&sig=${await sign(companyId, mediaId, exp)}`;
    },
    /** True when `sig` is ours for this media and `exp` (epoch seconds) has not passed. */
    async verify(companyId: string, mediaId: string, exp: string | undefined, sig: string | undefined): Promise<boolean> {
      if (!exp || !sig || !/^\d{1,12}$/.test(exp) || Number(exp) * 1000 < now().getTime()) return false;
      const want = Buffer.from(await sign(companyId, mediaId, Number(exp)));
      const got = Buffer.from(sig);
      return want.length === got.length && timingSafeEqual(want, got);
    },
  };
}

/** Whether a platform on the internet could reach this URL (not loopback, private, link-local or .local). */
export function isPublicUrl(url: string): boolean {
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
  } catch {
    return false;
  }
  if (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host.endsWith(".local") ||
    host.endsWith(".internal") ||
    (!host.includes(".") && !host.includes(":"))
  )
    return false;
  const v4 = host.match(/^(\d+)\.(\d+)\.(\d+)\.(\d+)$/);
  if (v4) {
    const [a, b] = [Number(v4[1]), Number(v4[2])];
    return !(
      a === 10 ||
      a === 127 ||
      a === 0 ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      (a === 169 && b === 254) ||
      (a === 100 && b >= 64 && b <= 127)
    );
  }
  if (host.includes(":")) return !(host === "::1" || host.startsWith("fc") || host.startsWith("fd") || host.startsWith("fe80"));
  return true;
}
