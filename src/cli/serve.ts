/**
 * `switchboard serve`: migrations, then HTTP, job loop, scheduler and channel receivers. SIGTERM/SIGINT
 * drain: stop the scheduler, stop accepting and wait for in-flight requests (with a deadline), drain the
 * job loop (unfinished leases released), checkpoint and close the database, exit 0.
 */
import { createApp } from "../app";
import { startCheckpointer } from "../db/checkpointer";
import { buildDeps, databasePath } from "../deps";
import { createLogger } from "../platform/logger";
import { VERSION } from "../version";
import { wireModules, startModules, stopModules } from "../wire";
import { readTlsFiles, TlsFilesError, type TlsFiles } from "../platform/http/tls";
import { loadCliConfig, parse, UsageError } from "./cli.util";

export async function serveCommand(args: string[]): Promise<void> {
  const { values } = parse(args, {}, "switchboard serve [--config PATH]");
  const config = loadCliConfig(values.config);
  const log = createLogger({ level: config.log.level, pretty: process.env.SWITCHBOARD_LOG_PRETTY === "1" });
  const deps = buildDeps({ config, log });
  const checkpointer = deps.db.engine === "sqlite" ? startCheckpointer({ db: deps.db, path: databasePath(config), log }) : null;
  wireModules(deps);
  const app = createApp(deps);

  const [host, port] = splitListen(config.server.listen);
  const tlsFiles = () => readTlsFiles({ certFile: config.server.tls_cert_file, keyFile: config.server.tls_key_file });
  let tls: TlsFiles | undefined;
  try {
    tls = config.server.tls_cert_file ? tlsFiles() : undefined;
  } catch (e) {
    if (e instanceof TlsFilesError) throw new UsageError(e.message);
    throw e;
  }
  const listen = (with_: TlsFiles | undefined) => {
    try {
      // NB! Large on purpose: POST /contacts/import streams NDJSON/CSV bodies of millions of rows. Routes that
      // buffer (media uploads) refuse oversized bodies by Content-Length themselves (100 MB).
      // reusePort off: a second appliance on the same port (and database) must fail, not share the socket.
      app.listen({ hostname: host, port, maxRequestBodySize: 4 * 1024 ** 3, reusePort: false, ...(with_ ? { tls: { cert: with_.cert, key: with_.key } } : {}) });
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (code === "EADDRINUSE" || code === "EACCES")
        throw new UsageError(
          `cannot listen on ${config.server.listen}: ${code === "EADDRINUSE" ? "the address is in use (another switchboard, or another program)" : "permission denied (ports below 1024 need privileges)"}; choose another with [server] listen in the config or SWITCHBOARD_LISTEN=host:port`,
        );
      throw e;
    }
  };
  listen(tls);
  // One appliance per SQLite file (DESIGN §7): jobs still marked running were held by a process that is gone
  // (a crash, kill -9); they run again at once rather than when their lease expires. On PostgreSQL they may
  // be another live instance's: those of a dead one run again when their lease expires.
  if (deps.db.engine === "sqlite") {
    const orphans = deps.queue.releaseOrphans();
    if (orphans) log.warn({ jobs: orphans }, "jobs interrupted by the previous run were released");
  }
  deps.queue.start();
  deps.leader.start();
  deps.scheduler.start();
  await startModules(deps);
  log.info({ listen: config.server.listen, https: !!tls, version: VERSION, dataDir: config.storage.data_dir, storage: config.storage.driver }, "switchboard started");

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down");
    deps.scheduler.stop();
    deps.leader.stop();
    const deadline = Bun.sleep(config.server.shutdown_timeout_ms).then(() => "timeout" as const);
    const drained = await Promise.race([app.stop().then(() => "ok" as const), deadline]);
    if (drained === "timeout") await app.stop(true);
    await stopModules(deps);
    await deps.queue.stop(Math.max(1000, config.server.shutdown_timeout_ms / 2));
    deps.keys.flushUsage();
    checkpointer?.stop();
    deps.db.close();
    log.info({}, "stopped");
    log.flush?.();
    process.exit(0);
  };
  /**
   * SIGHUP (`systemctl reload`): re-read the certificate and key, so a renewed certificate needs no restart.
   * Nothing else is reloaded. A file that does not check out is logged and the old certificate stays.
   * NB! Bun 1.4.5's `server.reload({ tls })` keeps serving the old certificate (it swaps only fetch/error),
   * so the listener is replaced: stop() closes the listening socket at once and lets in-flight requests
   * finish on their connections; the new listener binds the same port about 2 ms later (a connection
   * attempted in that gap is refused; clients retry).
   */
  const reloadTls = () => {
    if (stopping) return;
    if (!tls) return log.info({}, "SIGHUP: no [server] tls_cert_file to reload");
    let next: TlsFiles;
    try {
      next = tlsFiles();
    } catch (e) {
      return log.error({ err: (e as Error).message }, "SIGHUP: certificate not reloaded; still serving the previous one");
    }
    const previous = tls;
    void app.server?.stop();
    try {
      listen(next);
      tls = next;
      log.info({ subject: next.certificate.subject, validTo: next.certificate.validTo, fingerprint256: next.certificate.fingerprint256 }, "SIGHUP: certificate reloaded");
    } catch (e) {
      log.error({ err: (e as Error).message }, "SIGHUP: could not listen again; trying the previous certificate");
      try {
        listen(previous);
      } catch {
        // Not listening at all: exit non-zero so the service manager restarts the appliance.
        log.fatal({ err: (e as Error).message }, "SIGHUP: cannot listen; exiting");
        log.flush?.();
        process.exit(1);
      }
    }
  };
  process.on("SIGHUP", reloadTls);
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

export function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(":");
  return [listen.slice(0, i).replace(/^\[|\]$/g, ""), Number(listen.slice(i + 1))];
}
