/**
 * How long one call to a channel provider may wait for its answer, and the `fetch` adapters get, which
 * enforces it. A provider that accepts the connection and never answers is then a failed attempt, retried
 * with backoff, instead of a send that waits for Bun's 5-minute idle timeout.
 *
 * NB! The bound is derived from the job lease on purpose. A dispatch job holds its lease for
 * `[jobs] lease_seconds`; a send still waiting for its provider when the lease runs out is claimed again by
 * another worker and reaches the provider a second time while the first call is still open. A send makes
 * at most three provider calls (upload, message, caption) after waiting up to 5 s for the account's rate,
 * so each call gets a quarter of the lease (15 s with the default 60 s): the whole send ends before its
 * lease does. The bound is per call and covers the body too: a large upload, or a media URL fetched for a
 * provider that takes uploads only (X, TikTok), needs lease_seconds raised on a slow link. A send of many
 * calls (X's chunked video upload) may outlive one lease: the job loop renews the lease while it runs.
 */
export function providerTimeoutMs(leaseSeconds: number): number {
  return leaseSeconds * 250;
}

/** `fetch` whose calls without a `signal` of their own are aborted after `timeoutMs`. */
export function boundedFetch(fetchImpl: typeof fetch, timeoutMs: number): typeof fetch {
  const bounded = (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) =>
    fetchImpl(input, init?.signal ? init : { ...init, signal: AbortSignal.timeout(timeoutMs) });
  return Object.assign(bounded, { preconnect: fetchImpl.preconnect }) as typeof fetch;
}
