/**
 * Identity normalisation — one rule per channel, in one table (STYLE: rules read like the seed's table).
 *   whatsapp   E.164 phone number (libphonenumber-js). `+` optional: provider wa_ids come without it.
 *   email      trimmed, lower-cased, `local@domain.tld`.
 *   instagram, x, tiktok, telegram
 *              a platform user id (verified) or `@username` (lower-cased, stored `pending` until an inbound
 *              message or a provider lookup resolves it to the user id).
 *   messenger  a page-scoped id (PSID).
 */
import { parsePhoneNumberFromString } from "libphonenumber-js/max";
import { CHANNELS, type Channel } from "../../channels/channel.types";
import { validationFailed } from "../../platform/errors";

export type IdentityStatus = "verified" | "pending";
export interface NormalisedIdentity {
  value: string;
  status: IdentityStatus;
}

const USER_ID = /^-?[A-Za-z0-9_.:-]{1,128}$/;
const USERNAME = /^@[A-Za-z0-9_.]{1,64}$/;
const EMAIL = /^[^\s@"<>()[\],;:]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

type Rule = (value: string) => NormalisedIdentity | string; // string = why it is invalid

const handle: Rule = (v) => {
  if (v.startsWith("@"))
    return USERNAME.test(v) ? { value: v.toLowerCase(), status: "pending" } : "must be a user id or an @username (letters, digits, _ and .)";
  return USER_ID.test(v) ? { value: v, status: "verified" } : "must be a user id or an @username";
};

const phoneRule: Rule = (v) => {
  const cleaned = v.replace(/[\s().-]/g, "");
  if (!/^\+?\d{4,17}$/.test(cleaned)) return "must be a phone number in international format, e.g. +14155550123";
  const phone = parsePhoneNumberFromString(cleaned.startsWith("+") ? cleaned : `+${cleaned}`);
  if (!phone?.isValid()) return "is not a valid phone number (international format, e.g. +14155550123)";
  return { value: phone.number, status: "verified" };
};

/**
 * libphonenumber's parse and validation cost ~10 µs, a twentieth of a whole POST /messages; an API client
 * sends to the same numbers again and again. Results are pure functions of the text: a bounded memo
 * (emptied when full, so a million-row import of distinct numbers costs only the Map writes).
 */
const phoneMemo = new Map<string, NormalisedIdentity | string>();
const memoPhone: Rule = (v) => {
  let r = phoneMemo.get(v);
  if (r === undefined) {
    if (phoneMemo.size >= 10_000) phoneMemo.clear();
    phoneMemo.set(v, (r = phoneRule(v)));
  }
  return typeof r === "string" ? r : { ...r };
};

const RULES: Record<Channel, Rule> = {
  whatsapp: memoPhone,
  email: (v) => {
    const e = v.toLowerCase();
    return e.length <= 254 && EMAIL.test(e) ? { value: e, status: "verified" } : "must be an e-mail address";
  },
  instagram: handle,
  x: handle,
  tiktok: handle,
  telegram: handle,
  messenger: (v) => (USER_ID.test(v) ? { value: v, status: "verified" } : "must be a page-scoped user id (PSID)"),
};

export function isChannel(c: string): c is Channel {
  return (CHANNELS as readonly string[]).includes(c);
}

/** Returns the normalised identity, or the reason it is invalid (for callers that collect all problems). */
export function tryNormaliseIdentity(channel: string, value: unknown): NormalisedIdentity | { error: string; field: "channel" | "value" } {
  if (!isChannel(channel)) return { error: `must be one of ${CHANNELS.join(", ")}`, field: "channel" };
  if (typeof value !== "string" || !value.trim()) return { error: "must be a non-empty string", field: "value" };
  const r = RULES[channel](value.trim());
  return typeof r === "string" ? { error: r, field: "value" } : r;
}

/**
 * Normalises one identity or throws 422 VALIDATION_FAILED. `pointer` is the JSON Pointer of the identity
 * object in the caller's body (e.g. `/to`, `/identities/2`); the detail points at its `/value` or `/channel`.
 */
export function normaliseIdentity({ channel, value, pointer = "" }: { channel: string; value: string; pointer?: string }): NormalisedIdentity {
  const r = tryNormaliseIdentity(channel, value);
  if ("error" in r) throw validationFailed([{ pointer: `${pointer}/${r.field}`, message: r.error }]);
  return r;
}
