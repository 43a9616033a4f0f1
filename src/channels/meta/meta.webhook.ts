/**
 * The /hooks request handling every Meta adapter shares: handshake on GET, signature check on POST, JSON
 * parse, then the provider-specific parser turns the payload into events.
 */
import type { AdapterContext, InboundEvent, WebhookRequest, WebhookResult } from "../channel.types";
import { answerHandshake, SIGNATURE_HEADER, verifyHubSignature } from "./meta.signature";

export async function handleMetaWebhook({
  request,
  appSecret,
  verifyToken,
  log,
  parse,
}: {
  request: WebhookRequest;
  appSecret: string;
  verifyToken: string;
  log: AdapterContext["log"];
  /** Turns a verified, parsed payload into events; unknown objects/fields yield []. */
  parse: (payload: unknown) => InboundEvent[] | Promise<InboundEvent[]>;
}): Promise<WebhookResult> {
  if (request.method === "GET") {
    const response = answerHandshake({ url: request.url, verifyToken });
    if (response.status !== 200) log.warn({ mode: request.url.searchParams.get("hub.mode") }, "meta webhook handshake refused");
    return { response, events: [] };
  }
  if (request.method !== "POST") {
    return { response: { status: 405, body: "Method Not Allowed", headers: { allow: "GET, POST" } }, events: [] };
  }

  // NB! Nothing from an unverified body may reach the parser: a forged request yields 401 and zero events.
  const signature = request.headers.get(SIGNATURE_HEADER);
  if (!verifyHubSignature({ appSecret, rawBody: request.rawBody, header: signature })) {
    log.warn({ hasSignature: signature !== null }, "meta webhook signature rejected");
    return { response: { status: 401, body: "invalid signature" }, events: [] };
  }

  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder().decode(request.rawBody));
  } catch {
    return { response: { status: 400, body: "invalid JSON" }, events: [] };
  }

  // Meta retries non-2xx deliveries for hours; a signed payload we cannot use is acknowledged, not bounced.
  let events: InboundEvent[];
  try {
    events = await parse(payload);
  } catch (error) {
    // A parser bug must not swallow the delivery: 500 makes Meta redeliver it later.
    log.error({ err: error }, "meta webhook payload could not be parsed");
    return { response: { status: 500, body: "parse error" }, events: [] };
  }
  return { response: { status: 200, body: "EVENT_RECEIVED", headers: { "content-type": "text/plain; charset=utf-8" } }, events };
}
