/**
 * The Authorization header of one X API request: OAuth 2.0 Bearer, or OAuth 1.0a HMAC-SHA1 signed by
 * the `oauth-1.0a` library (node:crypto computes the HMAC; nothing hand-rolled).
 *
 * NB! The JSON body is not part of an OAuth 1.0a signature (only form bodies are), so the signature
 * covers method, URL and query — that is what X checks, too.
 */
import { createHmac } from "node:crypto";
import OAuth from "oauth-1.0a";
import type { XAuthMode, XSettings } from "./x.settings";

export function xAuthorization(opts: { settings: XSettings; auth: XAuthMode; method: string; url: string; now: () => Date }): string {
  const { settings } = opts;
  if (opts.auth === "oauth2") return `Bearer ${settings.access_token}`;
  const oauth = new OAuth({
    consumer: { key: settings.consumer_key, secret: settings.consumer_secret },
    signature_method: "HMAC-SHA1",
    hash_function: (base, key) => createHmac("sha1", key).update(base).digest("base64"),
  });
  // The library reads the wall clock; the appliance's clock is injected.
  oauth.getTimeStamp = () => Math.floor(opts.now().getTime() / 1000);
  const data = oauth.authorize({ url: opts.url, method: opts.method }, { key: settings.access_token, secret: settings.access_token_secret });
  return oauth.toHeader(data).Authorization;
}
