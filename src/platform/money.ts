/**
 * Money is integer micro-units (1 unit = 1,000,000 micros) everywhere inside; the API shows decimal
 * text with exactly 6 places. This is the only place that converts.
 */
export const MICROS_PER_UNIT = 1_000_000;
const DECIMAL = /^(\d{1,12})(?:\.(\d{1,6}))?$/;

export function formatMicros(micros: number): string {
  const sign = micros < 0 ? "-" : "";
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_UNIT);
  const frac = String(abs % MICROS_PER_UNIT).padStart(6, "0");
  return `${sign}${whole}.${frac}`;
}

/** Parses non-negative decimal text ("25", "0.05", "10.000000") into micros; null when not a valid amount. */
export function parseMicros(text: string): number | null {
  const m = DECIMAL.exec(text.trim());
  if (!m) return null;
  return Number(m[1]) * MICROS_PER_UNIT + Number((m[2] ?? "").padEnd(6, "0"));
}

export function money(micros: number, unit: string): { amount: string; unit: string } {
  return { amount: formatMicros(micros), unit };
}
