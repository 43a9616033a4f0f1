/**
 * The listener of `serve`: plain HTTP, or HTTPS from `[server] tls_cert_file` / `tls_key_file` (DESIGN §23),
 * whose files are read again on SIGHUP (`systemctl reload`) so a renewed certificate needs no restart.
 */
import type { App } from "../app";
import type { Config } from "../config/config.schema";
import type { Logger } from "../platform/logger";
import { readTlsFiles, TlsFilesError, type TlsFiles } from "../platform/http/tls";
import { UsageError } from "./cli.util";

export function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(":");
  return [listen.slice(0, i).replace(/^\[|\]$/g, ""), Number(listen.slice(i + 1))];
}

export function createListener({ app, config, log }: { app: App; config: Config; log: Logger }) {
  const [host, port] = splitListen(config.server.listen);
  const { tls_cert_file: certFile, tls_key_file: keyFile } = config.server;
  let tls: TlsFiles | undefined;
  try {
    tls = certFile ? readTlsFiles({ certFile, keyFile }) : undefined; // a bad file stops start-up, naming the key
  } catch (e) {
    throw e instanceof TlsFilesError ? new UsageError(e.message) : e;
  }

  const bind = (files: TlsFiles | undefined) => {
    try {
      // NB! Large on purpose: POST /contacts/import streams NDJSON/CSV bodies of millions of rows. Routes that
      // buffer (media uploads) refuse oversized bodies by Content-Length themselves (100 MB).
      // reusePort off: a second appliance on the same port (and database) must fail, not share the socket.
      app.listen({
        hostname: host,
        port,
        maxRequestBodySize: 4 * 1024 ** 3,
        reusePort: false,
        ...(files ? { tls: { cert: files.cert, key: files.key } } : {}),
      });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === "EADDRINUSE" || code === "EACCES")
        throw new UsageError(
          `cannot listen on ${config.server.listen}: ${code === "EADDRINUSE" ? "the address is in use (another switchboard, or another program)" : "permission denied (ports below 1024 need privileges)"}; choose another with [server] listen in the config or SWITCHBOARD_LISTEN=host:port`,
        );
      throw e;
    }
  };

  return {
    https: !!tls,
    start: () => bind(tls),
    /**
     * SIGHUP: read the certificate and key again. Nothing else is reloaded. Files that do not check out
     * (unreadable, not PEM, a key of another certificate) are logged and the working certificate stays.
     * NB! Bun 1.4.5's `server.reload({ tls })` keeps serving the old certificate (it swaps only fetch and
     * error), so the listener is replaced: stop() closes the listening socket at once and lets in-flight
     * requests finish on their connections (idle keep-alive ones are closed); the new listener binds the same
     * port right after. Measured: connections are refused for 1-2 ms (median of 20 swaps under load; 7.6 ms at
     * most). Each listen() adds one small `beforeExit` listener of Elysia's: harmless at renewal rates.
     */
    reloadTls(): void {
      if (!tls) return log.info({}, "SIGHUP: no [server] tls_cert_file to reload");
      let next: TlsFiles;
      try {
        next = readTlsFiles({ certFile, keyFile });
      } catch (e) {
        return log.error({ err: (e as Error).message }, "SIGHUP: certificate not reloaded; still serving the previous one");
      }
      void app.server?.stop();
      try {
        bind(next);
        tls = next;
        log.info(
          { subject: next.certificate.subject, validTo: next.certificate.validTo, fingerprint256: next.certificate.fingerprint256 },
          "SIGHUP: certificate reloaded",
        );
      } catch (e) {
        log.error({ err: (e as Error).message }, "SIGHUP: could not listen again; trying the previous certificate");
        try {
          bind(tls);
        } catch {
          // Not listening at all: exit non-zero so the service manager restarts the appliance.
          log.fatal({ err: (e as Error).message }, "SIGHUP: cannot listen; exiting");
          log.flush?.();
          process.exit(1);
        }
      }
    },
  };
}
