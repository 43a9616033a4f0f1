/**
 * Licensed modules (DESIGN §8): the pipeline and source-tracking endpoints need a license file
 * `{"payload": "<JSON text>", "signature": "<base64 Ed25519 signature of the payload text>"}` whose payload
 * is `{"company": "<slug>", "modules": ["pipeline", "sources"], "expiresAt": "<ISO>", "issuedAt"?}`.
 * Checked per request; the file is re-read when its modification time or size changes, so replacing it
 * needs no restart. The signature is over the payload's exact text (no canonical-JSON ambiguity).
 *   missing / unreadable / bad signature / other company → 403 LICENSE_NOT_FOUND
 *   expired → 403 LICENSE_EXPIRED;  module not listed → 403 FEATURE_NOT_LICENSED
 */
import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { statSync, readFileSync } from "node:fs";
import { AppError } from "../errors";

export const LICENSED_MODULES = ["pipeline", "sources"] as const;
export type LicensedModule = (typeof LICENSED_MODULES)[number];

export interface LicensePayload {
  company: string;
  modules: string[];
  expiresAt: string;
  issuedAt?: string;
}

type Loaded = { ok: true; payload: LicensePayload } | { ok: false; reason: string };
/** A license file read and verified: its payload, or why it is not usable. */
export type LoadedLicense = Loaded;

export function createLicenseChecker({ path, publicKey, now }: { path: string; publicKey: string; now: () => Date }) {
  const key: KeyObject = createPublicKey({ key: Buffer.from(publicKey, "base64"), format: "der", type: "spki" });
  let cached: { stamp: string; loaded: Loaded } | null = null;

  function load(): Loaded {
    let stamp: string;
    try {
      const st = statSync(path);
      stamp = `${st.ino}:${st.mtimeMs}:${st.size}`;
    } catch {
      cached = null;
      return { ok: false, reason: `no license file at ${path}` };
    }
    if (cached?.stamp === stamp) return cached.loaded;
    cached = { stamp, loaded: parse() };
    return cached.loaded;
  }

  function parse(): Loaded {
    try {
      const file = JSON.parse(readFileSync(path, "utf8")) as { payload?: unknown; signature?: unknown };
      if (typeof file.payload !== "string" || typeof file.signature !== "string") return { ok: false, reason: "the license file is not a signed license" };
      if (!verify(null, Buffer.from(file.payload), key, Buffer.from(file.signature, "base64")))
        return { ok: false, reason: "the license signature is not valid" };
      const payload = JSON.parse(file.payload) as LicensePayload;
      if (typeof payload.company !== "string" || !Array.isArray(payload.modules) || Number.isNaN(Date.parse(payload.expiresAt)))
        return { ok: false, reason: "the license payload is incomplete" };
      return { ok: true, payload };
    } catch {
      return { ok: false, reason: "the license file cannot be read" };
    }
  }

  return {
    /** The license file as it is now (re-read when it changed): its verified payload, or why there is none. */
    read(): Loaded {
      return load();
    },
    /** Throws the 403 that applies, or returns the license. */
    check(companySlug: string, module: LicensedModule): LicensePayload {
      const loaded = load();
      if (!loaded.ok) throw new AppError("LICENSE_NOT_FOUND", `No valid license: ${loaded.reason}`);
      const license = loaded.payload;
      if (license.company !== companySlug) throw new AppError("LICENSE_NOT_FOUND", "The license is for another company");
      if (Date.parse(license.expiresAt) <= now().getTime()) throw new AppError("LICENSE_EXPIRED", `The license expired at ${license.expiresAt}`);
      if (!license.modules.includes(module)) throw new AppError("FEATURE_NOT_LICENSED", `The license does not include the ${module} module`);
      return license;
    },
  };
}
export type LicenseChecker = ReturnType<typeof createLicenseChecker>;
