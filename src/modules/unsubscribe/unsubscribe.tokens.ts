/**
 * Unsubscribe tokens (DESIGN §20): the `{token}` of `{public_url}/u/{token}`, an HMAC-signed reference to
 * (company, contact, channel, campaign?). Never guessable and never a bare id: a token names its contact only
 * together with a MAC that only this appliance can make.
 *
 * Layout (bytes, then base64url, no padding):
 *   version (1) · channel (1) · company uuid (16) · contact uuid (16) · [campaign uuid (16)] · MAC (16)
 * MAC = HMAC-SHA256(key[version], every byte before it), first 128 bits. 67 characters without a campaign,
 * 88 with one. The key of a version is HKDF-SHA256 of that version's random secret (kept in the database,
 * see unsubscribe.service.ts), info "switchboard/unsubscribe/v<n>".
 *
 * Rotation: add a version with a new secret and make it CURRENT; tokens of the older versions keep verifying
 * until their version is removed from the table (mail already delivered carries them for a long time).
 *
 * NB! `verify` answers only "ours and intact" or undefined; every way of being wrong (bad base64, unknown
 * version, wrong length, another appliance's key, one changed character) is the same undefined, and the MAC
 * is compared in constant time.
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

export interface UnsubscribeRef {
  companyId: string;
  contactId: string;
  channel: "email";
  campaignId?: string;
}

/** Channel codes inside a token (one byte; never renumber). */
const CHANNEL_CODES = { email: 1 } as const satisfies Record<UnsubscribeRef["channel"], number>;
const CHANNEL_OF_CODE = new Map<number, UnsubscribeRef["channel"]>(
  Object.entries(CHANNEL_CODES).map(([channel, code]) => [code, channel as UnsubscribeRef["channel"]]),
);

const MAC_BYTES = 16;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

const uuidBytes = (id: string) => Buffer.from(id.replace(/-/g, ""), "hex");
const uuidOf = (b: Buffer) => {
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** The 32-byte signing key of one version, from that version's secret. */
export function deriveUnsubscribeKey(secret: string, version: number): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.from(secret, "base64url"), Buffer.alloc(0), `switchboard/unsubscribe/v${version}`, 32));
}

/**
 * `keys`: version → key (deriveUnsubscribeKey); `current` signs new tokens, every listed version verifies.
 */
export function createUnsubscribeTokens({ keys, current }: { keys: ReadonlyMap<number, Buffer>; current: number }) {
  if (!keys.has(current)) throw new Error(`unsubscribe tokens: no key for the current version ${current}`);
  const mac = (key: Buffer, body: Buffer) => createHmac("sha256", key).update(body).digest().subarray(0, MAC_BYTES);
  return {
    /** The token of a reference; undefined when an id is not a UUID (every id the appliance makes is one). */
    sign(ref: UnsubscribeRef): string | undefined {
      const ids = [ref.companyId, ref.contactId, ...(ref.campaignId ? [ref.campaignId] : [])];
      if (!ids.every((id) => UUID.test(id))) return undefined;
      const body = Buffer.concat([Buffer.from([current, CHANNEL_CODES[ref.channel]]), ...ids.map(uuidBytes)]);
      return Buffer.concat([body, mac(keys.get(current)!, body)]).toString("base64url");
    },
    /** The reference a token signs, or undefined for anything not made by `sign` with a key still known. */
    verify(token: string): UnsubscribeRef | undefined {
      if (token.length > 128 || !BASE64URL.test(token)) return undefined;
      const raw = Buffer.from(token, "base64url");
      // base64url decoding is lenient about trailing bits: insist on the canonical form, so one token has one spelling.
      if (raw.toString("base64url") !== token) return undefined;
      const idBytes = raw.length - 2 - MAC_BYTES;
      if (idBytes !== 32 && idBytes !== 48) return undefined;
      const key = keys.get(raw[0]!);
      const channel = CHANNEL_OF_CODE.get(raw[1]!);
      if (!key || !channel) return undefined;
      const body = raw.subarray(0, raw.length - MAC_BYTES);
      if (!timingSafeEqual(mac(key, body), raw.subarray(raw.length - MAC_BYTES))) return undefined;
      const ids = body.subarray(2);
      return {
        companyId: uuidOf(ids.subarray(0, 16)),
        contactId: uuidOf(ids.subarray(16, 32)),
        channel,
        ...(idBytes === 48 ? { campaignId: uuidOf(ids.subarray(32, 48)) } : {}),
      };
    },
  };
}

export type UnsubscribeTokens = ReturnType<typeof createUnsubscribeTokens>;
