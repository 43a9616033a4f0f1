/**
 * The delivery engine: fan-out of events to endpoints (inside the emitting transaction) and the
 * `webhook.deliver` job that makes one HTTP attempt and decides what happens next.
 *
 * Policy (DESIGN §6, Svix's schedule):
 * - One delivery per (message, endpoint), one job per delivery, grouped by endpoint: the queue runs at most
 *   `[webhooks] concurrency_per_endpoint` attempts per endpoint, so one slow receiver never delays another.
 * - Attempts: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after each failure (±10 % jitter);
 *   8 attempts in all. Only 2xx is success; redirects are not followed (a 3xx is a failure).
 * - 429/503 with `Retry-After` (seconds or HTTP date): the next attempt waits that long instead (capped at 24 h).
 * - 410 Gone disables the endpoint at once; an endpoint whose attempts all failed for 5 days is disabled.
 *   Both emit `webhook.endpoint_disabled`. Pending deliveries of a disabled endpoint fail without a request.
 * - Crash safety: the job is the durable record of "an attempt is due". An attempt's record and the job's
 *   next step commit in one transaction (the queue's `writes` outcome), so a crash before that commit
 *   repeats the attempt (at-least-once) with the same `webhook-id`; receivers dedupe on it.
 */
import type { Metrics } from "../../platform/http/metrics";
import type { FanOutPayload } from "../../jobs";
import { parseRetryAfter as parseRetryAfterHeader } from "../../platform/http/retry-after";
import type { Logger } from "../../platform/logger";
import { newId } from "../../platform/ids";
import type { DomainEvent, EventBus, EventName } from "../../events";
import type { Queue } from "../../jobs";
import type { Job, JobOutcome } from "../../platform/queue/queue";
import { VERSION } from "../../version";
import type { DeliveryContext, WebhooksRepository } from "./webhooks.repository";
import { activeSecrets, signedHeaders } from "./webhooks.signing";
import type { SubscriptionCache } from "./webhooks.cache";
import type { UrlPolicy } from "./webhooks.url-policy";

export const DELIVER_JOB = "webhook.deliver";
export const FANOUT_JOB = "webhook.fanout";

/** Delay before attempt n+1 after attempt n failed (index n-1); its length + 1 is the number of attempts. */
export const RETRY_SCHEDULE_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 10 * 3_600_000] as const;
export const MAX_ATTEMPTS = RETRY_SCHEDULE_MS.length + 1;
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3_600_000;
const MAX_RETRY_AFTER_MS = 24 * 3_600_000;
const EXCERPT_BYTES = 1024;

/** Delay after `attempts` failed scheduled attempts, with ±10 % jitter; null when none are left. */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number | null {
  const base = RETRY_SCHEDULE_MS[attempts - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.9 + random() * 0.2));
}

/** A receiver's `Retry-After` in milliseconds, capped at MAX_RETRY_AFTER_MS; null when absent/invalid. */
export function parseRetryAfter(value: string | null, now: Date): number | null {
  const ms = parseRetryAfterHeader({ header: value, now });
  return ms === undefined ? null : Math.min(ms, MAX_RETRY_AFTER_MS);
}

export interface AttemptResult {
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
  retryAfterMs: number | null;
}

/** The JSON body of a message: the exact bytes every attempt sends. */
export function messageBody(type: EventName, timestamp: Date, data: object): string {
  return JSON.stringify({ type, timestamp: timestamp.toISOString(), data });
}

export function createDeliveryEngine({
  repo,
  cache,
  policy,
  queue,
  events,
  now,
  fetch: fetchImpl,
  timeoutMs,
  log,
  metrics,
}: {
  repo: WebhooksRepository;
  cache: SubscriptionCache;
  policy: UrlPolicy;
  queue: Queue;
  events: EventBus;
  now: () => Date;
  fetch: typeof fetch;
  timeoutMs: number;
  log: Logger;
  metrics?: Metrics;
}) {
  /** Stores the message and enqueues one delivery per endpoint; runs inside the caller's unit of work. */
  async function enqueueMessage({
    id,
    companyId,
    type,
    createdAt,
    body,
    endpointIds,
  }: {
    id: string;
    companyId: string;
    type: string;
    createdAt: Date;
    body: string;
    endpointIds: string[];
  }): Promise<string[]> {
    await repo.insertMessage({ id, companyId, eventType: type, body, createdAt: createdAt.getTime() });
    return await createDeliveries({ id, companyId, type, endpointIds });
  }

  async function createDeliveries({
    id,
    companyId,
    type,
    endpointIds,
  }: {
    id: string;
    companyId: string;
    type: string;
    endpointIds: string[];
  }): Promise<string[]> {
    const at = now().getTime();
    const ids: string[] = [];
    for (const endpointId of endpointIds) {
      const deliveryId = newId();
      await repo.insertDelivery({ id: deliveryId, companyId, endpointId, messageId: id, eventType: type, at });
      await queue.enqueueJob({ type: DELIVER_JOB, payload: { deliveryId }, groupKey: endpointId });
      ids.push(deliveryId);
    }
    return ids;
  }

  /**
   * Event subscriber, inside the emitting unit (which waits for the promise it answers: db.track). It stores the
   * message body and ONE fan-out job naming the subscribed endpoints, so the request that caused the event writes
   * two rows however many endpoints there are; the fan-out job then creates one delivery and one delivery job
   * per endpoint, atomically with its own completion. Nothing is lost: the job commits with the event.
   * Not an async function: an event no endpoint wants (the common case) answers at once, with no promise.
   */
  function onEvent(event: DomainEvent): void | Promise<void> {
    const matched = cache.matching(event.companyId, event.type);
    if (!Array.isArray(matched)) return matched.then((endpointIds) => record(event, endpointIds));
    if (matched.length) return record(event, matched);
  }

  async function record(event: DomainEvent, endpointIds: string[]): Promise<void> {
    if (!endpointIds.length) return;
    await repo.insertMessage({
      id: event.id,
      companyId: event.companyId,
      eventType: event.type,
      body: messageBody(event.type, event.createdAt, await event.payload()),
      createdAt: event.createdAt.getTime(),
    });
    await queue.enqueueJob({ type: FANOUT_JOB, payload: { messageId: event.id, companyId: event.companyId, type: event.type, endpointIds } });
  }

  /** The fan-out job (inline): deliveries and their jobs, committed with the job's own removal. */
  async function fanOut(job: Job<FanOutPayload>): Promise<JobOutcome> {
    const { messageId, companyId, type, endpointIds } = job.payload;
    await createDeliveries({ id: messageId, companyId, type, endpointIds });
  }

  async function attempt(ctx: DeliveryContext, at: Date): Promise<AttemptResult> {
    const checked = await policy.addressesBeforeSend(ctx.url);
    if ("problem" in checked)
      return { statusCode: null, durationMs: 0, responseExcerpt: null, error: `refused by URL policy: ${checked.problem}`, retryAfterMs: null };
    const secrets = activeSecrets(
      {
        secret: ctx.secret,
        previousSecret: ctx.previousSecret,
        previousSecretExpiresAt: ctx.previousSecretExpiresAt === null ? null : new Date(ctx.previousSecretExpiresAt),
      },
      at,
    );
    const headers = {
      ...signedHeaders({ secrets, id: ctx.messageId, at, body: ctx.body }),
      "content-type": "application/json",
      "user-agent": `Switchboard-Webhooks/${VERSION}`,
    };
    const started = performance.now();
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const res = await postPinned({
        fetchImpl,
        url: new URL(ctx.url),
        addresses: checked.addresses,
        init: { method: "POST", headers, body: ctx.body, redirect: "manual", signal },
      });
      const responseExcerpt = await readExcerpt(res);
      const retryAfterMs = res.status === 429 || res.status === 503 ? parseRetryAfter(res.headers.get("retry-after"), now()) : null;
      return { statusCode: res.status, durationMs: Math.round(performance.now() - started), responseExcerpt, error: null, retryAfterMs };
    } catch (e) {
      const durationMs = Math.round(performance.now() - started);
      const error = signal.aborted ? `timed out after ${timeoutMs} ms` : e instanceof Error ? e.message : String(e);
      return { statusCode: null, durationMs, responseExcerpt: null, error, retryAfterMs: null };
    }
  }

  async function disableEndpoint(ctx: DeliveryContext, reason: "gone" | "failing", at: Date): Promise<void> {
    // NB! `ctx` was read before the attempt's await: several attempts to one endpoint run at once and may
    // all decide to disable it. The change is conditional, so it is disabled (and announced) once.
    if (!(await repo.disableEndpoint(ctx.endpointId, reason, at))) return;
    cache.invalidate(ctx.companyId);
    const endpoint = (await repo.getEndpoint(ctx.companyId, ctx.endpointId))!;
    events.emit({
      companyId: ctx.companyId,
      type: "webhook.endpoint_disabled",
      data: {
        endpoint: { id: endpoint.id, url: endpoint.url, description: endpoint.description, events: endpoint.events, enabled: false, disabledReason: reason },
        reason,
        disabledAt: at.toISOString(),
      },
    });
    log.warn({ endpointId: ctx.endpointId, reason }, "webhook endpoint disabled");
  }

  async function handle(job: Job<{ deliveryId: string; manual?: boolean }>): Promise<JobOutcome> {
    const manual = job.payload.manual === true;
    const ctx = await repo.deliveryContext(job.payload.deliveryId);
    if (!ctx) return; // endpoint deleted (its deliveries went with it)
    if (!manual && ctx.status !== "pending") return; // settled meanwhile (e.g. by a redelivery)

    const at = now();
    const result: AttemptResult = ctx.enabled
      ? await attempt(ctx, at)
      : { statusCode: null, durationMs: 0, responseExcerpt: null, error: "endpoint is disabled; not sent", retryAfterMs: null };
    const settledAt = now();
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    if (ctx.enabled) metrics?.count("switchboard_webhook_deliveries_total", { outcome: ok ? "success" : "failure" });

    // The attempt's record and the job's next step commit together, batched with other finished attempts.
    return {
      writes: async (): Promise<JobOutcome> => {
        await repo.insertAttempt({
          id: newId(),
          deliveryId: ctx.deliveryId,
          trigger: manual ? "manual" : "scheduled",
          attemptedAt: at,
          statusCode: result.statusCode,
          durationMs: result.durationMs,
          responseExcerpt: result.responseExcerpt,
          error: result.error,
        });
        const attempts = manual ? ctx.attempts : ctx.attempts + 1;
        const settle = (status: "pending" | "succeeded" | "failed", nextAttemptAt: number | null) =>
          repo.settleDelivery({ id: ctx.deliveryId, status, attempts, nextAttemptAt, lastStatusCode: result.statusCode, at: settledAt.getTime() });

        if (ok) {
          await settle("succeeded", null);
          if (ctx.failingSince !== null) await repo.setFailingSince(ctx.endpointId, null);
          return;
        }
        if (!ctx.enabled) {
          await settle("failed", null);
          return;
        }
        if (result.statusCode === 410) {
          await settle("failed", null);
          await disableEndpoint(ctx, "gone", settledAt);
          return;
        }
        // Failure: the endpoint has been failing since its first failure with no success after it.
        if (ctx.failingSince === null) await repo.setFailingSince(ctx.endpointId, at.getTime());
        else if (settledAt.getTime() - ctx.failingSince >= DISABLE_AFTER_FAILING_MS) {
          await settle("failed", null);
          await disableEndpoint(ctx, "failing", settledAt);
          return;
        }
        if (manual) {
          // A redelivery is one attempt; an automatic retry that is still scheduled carries on.
          await settle(ctx.nextAttemptAt !== null && ctx.status === "pending" ? "pending" : "failed", ctx.status === "pending" ? ctx.nextAttemptAt : null);
          return;
        }
        const delay = result.retryAfterMs ?? retryDelayMs(attempts);
        if (delay === null || attempts >= MAX_ATTEMPTS) {
          await settle("failed", null);
          return;
        }
        const retryAt = settledAt.getTime() + delay;
        await settle("pending", retryAt);
        return { retryAt: new Date(retryAt), error: result.error ?? `HTTP ${result.statusCode}` };
      },
    };
  }

  return { onEvent, enqueueMessage, fanOut, handle };
}

/** At most EXCERPT_BYTES of the response body, as text; the rest is not read. */
async function readExcerpt(res: Response): Promise<string | null> {
  if (!res.body) return null;
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < EXCERPT_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    if (size >= EXCERPT_BYTES) reader.cancel().catch(() => {});
    else reader.releaseLock();
  }
  if (!size) return "";
  const text = new TextDecoder("utf-8", { fatal: false }).decode(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES));
  return text;
}

/**
 * The attempt, to the addresses the policy checked (the next only when connecting to one fails). NB! The
 * URL's host is replaced by the address, so nothing resolves the name again between the check and the
 * connection (no DNS rebinding); `Host` and, for https, the TLS server name keep the name, so the receiver
 * routes and its certificate is verified as before (outbound.fetch.ts does the same for media).
 */
export async function postPinned({
  fetchImpl,
  url,
  addresses,
  init,
}: {
  fetchImpl: typeof fetch;
  url: URL;
  addresses: string[];
  init: RequestInit & { headers: Record<string, string> };
}): Promise<Response> {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  let lastError: unknown;
  for (const ip of addresses) {
    const pinned = new URL(url);
    pinned.hostname = ip.includes(":") ? `[${ip}]` : ip;
    try {
      return await fetchImpl(pinned, {
        ...init,
        headers: { ...init.headers, host: url.host },
        ...(url.protocol === "https:" && host !== ip ? { tls: { serverName: host } } : {}),
      });
    } catch (e) {
      if (init.signal?.aborted) throw e;
      lastError = e;
    }
  }
  throw lastError;
}
