import pino from "pino";

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
  if (usePretty) {
    const pretty = loadPretty();
    if (pretty) return pino(options, pretty({ sync: true, colorize: true }));
  }
  return pino(options, pino.destination({ dest: 1, sync: false }));
}

/**
 * pino-pretty is a devDependency, for `make dev` (SWITCHBOARD_LOG_PRETTY=1) from source: resolved here, only
 * when asked, and the build marks it `--external`, so the binary does not carry it. Asked for where it is not
 * installed (the binary, a production install), the log stays JSON lines, saying so on stderr.
 */
function loadPretty(): typeof import("pino-pretty") | undefined {
  try {
    return require("pino-pretty") as typeof import("pino-pretty");
  } catch {
    process.stderr.write("note: SWITCHBOARD_LOG_PRETTY is set but pino-pretty is not installed (a devDependency); logging JSON lines\n");
    return undefined;
  }
}

/**
 * Writes out what the logger's asynchronous stream still holds (before process.exit).
 * NB! sonic-boom's flushSync skips a write already handed to the thread pool (`_writing`): the last line logged
 * before the exit is such a write, and a loaded machine may not have run it when the process exits. So this
 * waits (up to a second) for the write in flight to finish, then writes the rest synchronously.
 * NB! A pipe that is full answers EAGAIN (the reader is slow: a test harness on a loaded machine): the write is
 * tried again, a millisecond apart, for up to half a second.
 */
export async function flushLog(log: Logger): Promise<void> {
  type Stream = { flushSync?: () => void; _writing?: boolean };
  const stream = (log as unknown as Record<symbol, Stream | undefined>)[pino.symbols.streamSym];
  for (let waited = 0; stream?._writing && waited < 1000; waited += 5) await Bun.sleep(5);
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; attempt < 500; attempt++) {
    try {
      stream?.flushSync?.();
      return;
    } catch (e) {
      // A stream not open yet has nothing to write; anything but a full pipe ends the attempts.
      if ((e as { code?: string }).code !== "EAGAIN") return;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

/** A logger that drops everything (tests, CLI one-shots). */
export const silentLogger: Logger = pino({ level: "silent" });
