/**
 * `switchboard templates sync`: fetches provider templates (WhatsApp `GET /{waba_id}/message_templates`)
 * for every account that has them, now, and stores them — the same sync `serve` runs at start and every
 * 30 minutes. Safe while `serve` runs (the database is shared; the next send sees the new statuses).
 * Exit 1 when any account failed, after printing every account's result.
 */
import { syncAllTemplates } from "../modules/messages/messages.wire";
import { cliDeps, parse, print, UsageError } from "./cli.util";

export async function templatesCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const usage = "switchboard templates sync [--config PATH] [--json]";
  if (sub !== "sync") throw new UsageError(`usage: ${usage}`);
  const { values } = parse(rest, { json: { type: "boolean" } }, usage);
  const deps = await cliDeps(values.config);
  let results;
  try {
    results = await syncAllTemplates(deps);
  } finally {
    deps.db.close();
  }
  const rows = results.map((r) => {
    const account = deps.channels.get(r.accountId)!.account;
    return {
      accountId: r.accountId,
      name: account.name,
      provider: account.provider,
      company: account.company,
      ...(r.error !== undefined ? { error: r.error } : { synced: r.synced ?? 0 }),
    };
  });
  const text = rows.length
    ? rows.map((r) => `${r.accountId}\t${r.provider}\t${r.name}\t${"error" in r ? `FAILED: ${r.error}` : `${r.synced} template(s)`}`).join("\n")
    : "(no account syncs provider templates)";
  print(values.json, rows, text);
  const failed = rows.filter((r) => "error" in r);
  if (failed.length) throw new UsageError(`template sync failed for ${failed.length} account(s): ${failed.map((r) => r.accountId).join(", ")}`);
}
