import pino from "pino";
import pretty from "pino-pretty";

export type Logger = pino.Logger;

/**
 * JSON lines to stdout. NB! No pino `transport:` here — transports use worker threads, which hang inside
 * the compiled binary (STACK-NOTES); pretty output is an in-process stream instead.
 * No `redact`: it costs several µs on every line of the hot access log; instead no code path logs a
 * key, token or secret (keys appear only as their id; adapters log provider codes, never credentials).
 */
export function createLogger({ level, pretty: usePretty }: { level: string; pretty?: boolean }): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  if (usePretty) return pino(options, pretty({ sync: true, colorize: true }));
  return pino(options, pino.destination({ dest: 1, sync: false }));
}

/** A logger that drops everything (tests, CLI one-shots). */
export const silentLogger: Logger = pino({ level: "silent" });
