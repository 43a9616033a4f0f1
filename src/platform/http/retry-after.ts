/**
 * The longest wait a `Retry-After` can ask for. NB! Without a bound a header of 14 digits (or an HTTP date in
 * the year 275760) made a send's `retryAt` an Invalid Date, and 309 digits made the delay Infinity; a day is
 * longer than any provider's published limit window (daily caps reset within 24 h).
 */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * A `Retry-After` header (delta seconds or an HTTP date) → milliseconds from `now`, between 0 and
 * MAX_RETRY_AFTER_MS; undefined when absent or unreadable.
 */
export function parseRetryAfter({ header, now }: { header: string | null; now: Date }): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Math.min(Number(trimmed) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - now.getTime()), MAX_RETRY_AFTER_MS);
}
