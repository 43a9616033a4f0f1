/** A `Retry-After` header (delta seconds or an HTTP date) → milliseconds from `now`; undefined when absent or unreadable. */
export function parseRetryAfter({ header, now }: { header: string | null; now: Date }): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}
