/**
 * `switchboard serve`: migrations, then HTTP, job loop, scheduler and channel receivers. SIGTERM/SIGINT
 * drain: stop the scheduler, stop accepting and wait for in-flight requests (with a deadline), drain the
 * job loop (unfinished leases released), checkpoint and close the database, exit 0.
 */
import { createApp } from "../app";
import { databasePath } from "../config/config.schema";
import { startCheckpointer } from "../db/checkpointer";
import { buildDeps } from "../deps";
import { createLogger, flushLog } from "../platform/logger";
import { VERSION } from "../version";
import { wireModules, startModules, stopModules } from "../wire";
import { loadCliConfig, parse } from "./cli.util";
import { createListener } from "./serve.listener";

export async function serveCommand(args: string[]): Promise<void> {
  const { values } = parse(args, {}, "switchboard serve [--config PATH]");
  const config = loadCliConfig(values.config);
  const log = createLogger({ level: config.log.level, pretty: process.env.SWITCHBOARD_LOG_PRETTY === "1" });
  const deps = await buildDeps({ config, log });
  const checkpointer = deps.db.engine === "sqlite" ? startCheckpointer({ db: deps.db, path: databasePath(config), log }) : null;
  await wireModules(deps);
  const app = createApp(deps);

  const listener = createListener({ app, config, log });
  let stopping = false;
  // Registered before the listener starts: SIGHUP's default action would end the process.
  process.on("SIGHUP", () => stopping || listener.reloadTls());
  listener.start();
  // One appliance per SQLite file (DESIGN §7): jobs still marked running were held by a process that is gone
  // (a crash, kill -9); they run again at once rather than when their lease expires. On PostgreSQL they may
  // be another live instance's: those of a dead one run again when their lease expires.
  if (deps.db.engine === "sqlite") {
    const orphans = await deps.queue.releaseOrphans();
    if (orphans) log.warn({ jobs: orphans }, "jobs interrupted by the previous run were released");
  }
  deps.queue.start();
  deps.leader.start();
  deps.scheduler.start();
  await startModules(deps);
  log.info(
    { listen: config.server.listen, https: listener.https, version: VERSION, dataDir: config.storage.data_dir, storage: config.storage.driver },
    "switchboard started",
  );

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
    await deps.keys.flushUsage();
    checkpointer?.stop();
    deps.db.close();
    log.info({}, "stopped");
    // NB! The log stream writes asynchronously: its last lines are written out before the exit, or they are lost.
    await flushLog(log);
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}
