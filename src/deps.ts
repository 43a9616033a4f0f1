/**
 * Builds the dependency object every module receives: config, database, clock, logger, events, queue,
 * scheduler and the cross-cutting stores. Nothing here listens or starts loops — `serve` does that.
 */
import { join } from "node:path";
import { databasePath, type Config } from "./config/config.schema";
import { openDatabase, type Db } from "./db/client";
import { openPostgres } from "./db/postgres/engine";
import { migrateWithBackup } from "./db/migrate";
import { migratePostgresAsync } from "./db/postgres/migrate";
import { createLeader } from "./platform/leader";
import { VERSION } from "./version";
import { createKeyResolver } from "./modules/api-keys/api-keys.service";
import { createLedger } from "./modules/billing/ledger.service";
import { systemClock, type Clock } from "./platform/clock";
import type { EventMap } from "./events";
import type { JobMap } from "./jobs";
import { createEventBus } from "./platform/events/events";
import { apiGuardPlugin, createAuthenticator } from "./platform/http/api-guard.plugin";
import { createChannelRuntime, validateChannelAccounts } from "./channels/channel.accounts";
import { createAdapterStateStore } from "./channels/adapter-state";
import { boundedFetch, providerTimeoutMs } from "./channels/provider-timeout";
import { ConfigError } from "./config/config.load";
import { createGuardedFetch, withUserAgent } from "./platform/outbound/outbound.fetch";
import { createOutboundPolicy, type OutboundPolicy } from "./platform/outbound/outbound.policy";
import { PUBLISHER_TIMEOUT_MS } from "./social-publishers/publisher.types";
import { createMetrics } from "./platform/http/metrics";
import { createLicenseChecker } from "./platform/license/license";
import { LICENSE_PUBLIC_KEY } from "./platform/license/license.key";
import { createRateLimiter, createSharedRateLimiter } from "./platform/http/rate-limit";
import { createIdempotencyStore } from "./platform/idempotency/idempotency";
import { createLogger, type Logger } from "./platform/logger";
import { createQueue } from "./platform/queue/queue";
import { createScheduler } from "./platform/scheduler";
import { createSharedThrottle, createThrottle } from "./platform/throttle";
import { resolvePipeline } from "./modules/pipeline/pipeline.config";
import { createSocialRuntime, validateSocialAccounts } from "./modules/social/social.accounts";

/** The configured database: the SQLite file in the data dir, or the PostgreSQL at `[storage] url`. */
export function openStorage(config: Config): Db {
  const s = config.storage;
  return s.driver === "postgres"
    ? openPostgres(s.url!, { poolSize: s.pool_size, connectTimeoutMs: s.connect_timeout_ms, statementTimeoutMs: s.statement_timeout_ms })
    : openDatabase(databasePath(config));
}

/** Migrates the database to this binary's schema (SQLite: with a backup first when it holds data). */
export async function migrateStorage(db: Db, config: Config): Promise<void> {
  if (db.engine === "postgres") {
    await migratePostgresAsync(db.url!, { version: VERSION });
    return;
  }
  // The backups go beside the data dir's database (openStorage's file, which an injected db — the test app's —
  // is opened on too). An empty database (a new or in-memory one) is not backed up: migrateWithBackup copies
  // only a database that has migrations applied.
  migrateWithBackup(db, {
    version: VERSION,
    backupDir: join(config.storage.data_dir, "backups"),
    keep: config.storage.backups_keep,
  });
}

export async function buildDeps({
  config,
  clock = systemClock,
  log = createLogger({ level: config.log.level }),
  db = openStorage(config),
  fetch: fetchImpl = globalThis.fetch,
}: {
  config: Config;
  clock?: Clock;
  log?: Logger;
  db?: Db;
  fetch?: typeof fetch;
}) {
  const now = () => clock.now();
  const accounts = validateChannelAccounts(config); // throws ConfigError before anything starts
  const pipeline = resolvePipeline(config.pipeline); // throws ConfigError naming the [pipeline] key
  const socialAccounts = validateSocialAccounts(config); // likewise for [[social_accounts]]
  const outboundPolicy = outboundPolicyOf(config); // likewise for [outbound]
  await migrateStorage(db, config);
  const keys = createKeyResolver({ db, now });
  // One process per SQLite database keeps limits in memory; instances sharing a PostgreSQL share them there.
  const shared = db.engine === "postgres";
  const limiter = shared ? createSharedRateLimiter({ db, now: () => clock.now().getTime() }) : createRateLimiter({ now: () => clock.now().getTime() });
  const idempotency = createIdempotencyStore({ db, now });
  /** Key → principal, with IP allow-list and rate limit: the API guard's, and /hooks' for the sandbox. */
  const authenticate = createAuthenticator({
    now,
    resolveKey: keys.resolveKey,
    markKeyUsed: keys.markKeyUsed,
    limiter,
    rateDefaults: { requestsPerSecond: config.rate_limit.requests_per_second, burst: config.rate_limit.burst },
    trustedProxies: config.server.trusted_proxies,
  });
  /** The API guard plugin; every module `.use(deps.guard)` to get the typed `scope` macro (deduplicated by name). */
  const license = createLicenseChecker({ path: config.license.file, publicKey: LICENSE_PUBLIC_KEY, now });
  const guard = apiGuardPlugin({ db, authenticate, idempotency, license, publicPaths: ["/openapi.json"] });
  const requestTimeoutMs = providerTimeoutMs(config.jobs.lease_seconds);
  // Every request we make says who we are (DESIGN §23): providers, webhook receivers, media hosts.
  const outboundFetch = withUserAgent(fetchImpl, `Switchboard/${VERSION}`);
  const providerFetch = boundedFetch(outboundFetch, requestTimeoutMs);
  /** URLs a caller supplied, fetched for a channel (X, TikTok uploads; e-mail attachments). */
  const fetchUrl = createGuardedFetch({ policy: outboundPolicy, fetch: outboundFetch, timeoutMs: requestTimeoutMs });
  const channels = createChannelRuntime({
    accounts,
    context: (account) => ({
      fetch: providerFetch,
      fetchUrl,
      requestTimeoutMs,
      now,
      log: log.child({ accountId: account.id, provider: account.provider }),
      publicUrl: config.server.public_url.replace(/\/$/, ""),
      dataDir: config.storage.data_dir,
      state: createAdapterStateStore(db, account.id),
    }),
  });
  const socialFetch = boundedFetch(outboundFetch, PUBLISHER_TIMEOUT_MS);
  const socialFetchUrl = createGuardedFetch({ policy: outboundPolicy, fetch: outboundFetch, timeoutMs: PUBLISHER_TIMEOUT_MS });
  const leader = createLeader({ db, url: config.storage.url, log });
  return {
    config,
    db,
    clock,
    now,
    log,
    fetch: outboundFetch,
    /** `[outbound]`: the static URL check for request acceptance (422) and the guarded fetcher's policy. */
    outbound: outboundPolicy,
    events: createEventBus<EventMap>({ now, track: (work) => db.track(work) }),
    queue: createQueue<JobMap>({
      db,
      now,
      log,
      workers: config.jobs.workers,
      maxAttempts: config.jobs.max_attempts,
      leaseMs: config.jobs.lease_seconds * 1000,
    }),
    leader,
    scheduler: createScheduler({ log, isLeader: leader.isLeader }),
    idempotency,
    limiter,
    guard,
    license,
    metrics: createMetrics(),
    startedAt: clock.now(),
    authenticate,
    channels,
    /** Social accounts from `[[social_accounts]]`, each with its publisher and status. */
    // NB! Publishers' calls are bounded like providers' (a slow platform kept a post `publishing` 150 s).
    social: createSocialRuntime({
      accounts: socialAccounts,
      context: (account) => ({
        fetch: socialFetch,
        fetchUrl: socialFetchUrl,
        now,
        sleep: (ms) => Bun.sleep(ms),
        log: log.child({ socialAccountId: account.id, provider: account.provider }),
      }),
    }),
    keys,
    ledger: createLedger({ db, now }),
    /** Channel accounts' send rate (wall clock: it paces real providers whatever the injected clock says). */
    throttle: shared ? createSharedThrottle({ db }) : createThrottle({ now: () => performance.timeOrigin + performance.now() }),
    pipeline,
  };
}

export type Deps = Awaited<ReturnType<typeof buildDeps>>;

/** The `[outbound]` address policy; a bad CIDR is a ConfigError that stops start-up. */
function outboundPolicyOf(config: Config): OutboundPolicy {
  try {
    return createOutboundPolicy(config.outbound);
  } catch (e) {
    throw new ConfigError((e as Error).message);
  }
}
