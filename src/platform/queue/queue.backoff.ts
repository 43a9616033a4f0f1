/** The default retry delay of a failed attempt (the queue's, and handlers that answer their own retryAt): exponential, capped at an hour, ±20 % jitter. */
export function defaultBackoffMs(attempts: number): number {
  const base = Math.min(1000 * 2 ** Math.max(0, attempts - 1), 3_600_000);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}
