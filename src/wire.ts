/**
 * Background wiring of every module: job handlers, event subscribers and recurring schedules. Called once
 * per process by `serve` and by the test harness (so queue.drain() in tests runs the real handlers). The
 * modules are src/assembly.ts's, the same instances createApp mounts; each module with background work wires
 * it in its factory's `wire()`.
 */
import type { Deps } from "./deps";
import { modulesOf } from "./assembly";

export async function wireModules(deps: Deps): Promise<void> {
  const m = modulesOf(deps);
  // Platform housekeeping.
  deps.scheduler.every("idempotency-sweep", "0 */10 * * * *", () => deps.idempotency.sweep());
  m.contacts.wire();
  deps.scheduler.every("api-key-usage-flush", "*/5 * * * * *", () => deps.keys.flushUsage(), { perInstance: true });
  // Event subscribers are called in subscription order (platform/events): this order is theirs.
  m.webhooks.wire();
  await m.messages.wire();
  m.campaigns.wire();
  m.pipeline.wire();
  m.sources.wire();
  m.social.wire();
  m.templates.wire();
}

/** Starts what runs beside the HTTP server once it listens (channel receivers, ...). */
export async function startModules(deps: Deps): Promise<void> {
  const m = modulesOf(deps);
  await deps.channels.start();
  // Long polling and IMAP run on one instance at a time: the leader (on SQLite, this one).
  deps.leader.onChange((leading) => void (leading ? deps.channels.startPolling() : deps.channels.stopPolling()));
  m.messages.start();
  m.social.start();
}

/** Stops it again on shutdown, before the job loop is drained. */
export async function stopModules(deps: Deps): Promise<void> {
  await deps.channels.stop();
}
