/**
 * The public key licenses are verified with, fixed at build time (DESIGN §8): never read from config.
 * `make release LICENSE_PUBLIC_KEY=<base64 SPKI DER>` embeds the vendor's key through --define; every other
 * build embeds the development key below, whose private half is test/fixtures/license-dev.private.key
 * (so tests and development can sign licenses). A build setting, not a runtime branch.
 */
declare const SWITCHBOARD_LICENSE_PUBLIC_KEY: string | undefined;

const DEVELOPMENT_KEY = "MCowBQYDK2VwAyEApq0Gzo78LpUEVLiKkgzB6zCAK/wTNkBQhTShnMZAym4=";

export const LICENSE_PUBLIC_KEY: string =
  typeof SWITCHBOARD_LICENSE_PUBLIC_KEY === "string" && SWITCHBOARD_LICENSE_PUBLIC_KEY ? SWITCHBOARD_LICENSE_PUBLIC_KEY : DEVELOPMENT_KEY;
