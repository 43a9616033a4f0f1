/** Operator commands on companies, keys, balances, jobs, the schema and backups. */
import { copyFileSync, existsSync, renameSync } from "node:fs";
import { databasePath } from "../config/config.schema";
import { Database } from "bun:sqlite";
import { resolve } from "node:path";
import { openStorage } from "../deps";
import { migratePostgresAsync } from "../db/postgres/migrate";
import type { Config } from "../config/config.schema";
import { createApiKey, listApiKeys, revokeApiKey } from "../modules/api-keys/api-keys.service";
import { createCompany, findCompanyBySlug, listCompanies } from "../modules/companies/companies.service";
import { seedSandboxTemplates } from "../modules/messages/messages.wire";
import { formatMicros, parseMicros } from "../platform/money";
import { migrate, schemaState, writeCheckedCopy } from "../db/migrate";
import { VERSION } from "../version";
import { cliDeps, loadCliConfig, parse, print, required, UsageError } from "./cli.util";

type Deps = Awaited<ReturnType<typeof cliDeps>>;

async function withDeps<T>(configFlag: string | undefined, fn: (deps: Deps) => T | Promise<T>): Promise<T> {
  const deps = await cliDeps(configFlag);
  try {
    return await fn(deps);
  } finally {
    deps.db.close();
  }
}

async function companyBySlug(deps: Deps, slug: string) {
  const c = await findCompanyBySlug({ db: deps.db, slug });
  if (!c) throw new UsageError(`no company with slug "${slug}" (see: switchboard companies list)`);
  return c;
}

function amountArg(text: string): number {
  const micros = parseMicros(text);
  if (micros === null) throw new UsageError(`--amount/--balance "${text}" is not a decimal amount like 25.000000`);
  return micros;
}

/** backup/restore copy the SQLite file; a PostgreSQL is backed up with its own tools. */
function refuseOnPostgres(config: Config, command: string): void {
  if (config.storage.driver === "postgres")
    throw new UsageError(`${command} copies the SQLite file; this appliance runs on PostgreSQL: use pg_dump / pg_restore (docs/operations.md, "PostgreSQL")`);
}

export async function migrateCommand(args: string[]): Promise<void> {
  const { values } = parse(args, {}, "switchboard migrate [--config PATH]");
  const config = loadCliConfig(values.config);
  let applied: number;
  if (config.storage.driver === "postgres") ({ applied } = await migratePostgresAsync(config.storage.url!, { version: VERSION }));
  else {
    const db = openStorage(config);
    try {
      ({ applied } = migrate(db));
    } finally {
      db.close();
    }
  }
  process.stdout.write(`${applied} migration(s) applied; schema is current\n`);
}

export function companiesCommand(args: string[]): void | Promise<void> {
  const [sub, ...rest] = args;
  if (sub === "create") {
    const usage = "switchboard companies create --slug S --name N [--balance 10.000000] [--json]";
    const { values } = parse(rest, { slug: { type: "string" }, name: { type: "string" }, balance: { type: "string" }, json: { type: "boolean" } }, usage);
    const slug = required(values.slug, "--slug", usage);
    const name = required(values.name, "--name", usage);
    const balance = values.balance !== undefined ? amountArg(values.balance) : 0;
    return withDeps(values.config, async (deps) => {
      const company = await deps.db.unit(async () => {
        const { company } = await createCompany({ db: deps.db, now: deps.now, slug, name });
        if (balance > 0) await deps.ledger.credit({ companyId: company.id, amount: balance, description: "starting balance" });
        // Its sandbox accounts (configured before the company existed) ship hello_world now, not at the
        // running appliance's next restart.
        await seedSandboxTemplates(deps);
        return company;
      });
      const out = { id: company.id, slug, name: company.name, balance: { amount: formatMicros(balance), unit: deps.config.billing.currency } };
      print(values.json, out, `Created company ${slug} (${company.id}), balance ${out.balance.amount} ${out.balance.unit}`);
    });
  } else if (sub === "list") {
    const { values } = parse(rest, { json: { type: "boolean" } }, "switchboard companies list [--json]");
    return withDeps(values.config, async (deps) => {
      const rows = [];
      for (const c of await listCompanies({ db: deps.db }))
        rows.push({
          id: c.id,
          slug: c.slug,
          name: c.name,
          balance: { amount: formatMicros(await deps.ledger.balance(c.id)), unit: deps.config.billing.currency },
          createdAt: c.createdAt.toISOString(),
        });
      print(values.json, rows, rows.map((c) => `${c.slug}\t${c.id}\t${c.balance.amount} ${c.balance.unit}\t${c.name}`).join("\n") || "(no companies)");
    });
  } else throw new UsageError("usage: switchboard companies create|list");
}

export function keysCommand(args: string[]): void | Promise<void> {
  const [sub, ...rest] = args;
  if (sub === "create") {
    const usage = "switchboard keys create --company SLUG [--name N] [--scopes a,b|*] [--allow-ip CIDR,...] [--expires-at ISO] [--rate-limit RPS] [--json]";
    const { values } = parse(
      rest,
      {
        company: { type: "string" },
        name: { type: "string" },
        scopes: { type: "string" },
        "allow-ip": { type: "string" },
        "expires-at": { type: "string" },
        "rate-limit": { type: "string" },
        json: { type: "boolean" },
      },
      usage,
    );
    const slug = required(values.company, "--company", usage);
    const list = (s: string | undefined) =>
      (s ?? "")
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean);
    let expiresAt: Date | null = null;
    if (values["expires-at"] !== undefined) {
      expiresAt = new Date(values["expires-at"]);
      if (Number.isNaN(expiresAt.getTime())) throw new UsageError(`--expires-at "${values["expires-at"]}" is not an ISO 8601 date-time`);
    }
    let rateLimit: number | null = null;
    if (values["rate-limit"] !== undefined) {
      rateLimit = Number(values["rate-limit"]);
      if (!(rateLimit > 0)) throw new UsageError(`--rate-limit "${values["rate-limit"]}" must be a positive number of requests per second`);
    }
    return withDeps(values.config, async (deps) => {
      const company = await companyBySlug(deps, slug);
      const { apiKey, key } = await createApiKey({
        db: deps.db,
        now: deps.now,
        companyId: company.id,
        name: values.name ?? "api key",
        scopes: values.scopes ? list(values.scopes) : ["*"],
        allowedIps: list(values["allow-ip"]),
        expiresAt,
        rateLimit,
      });
      print(values.json, { ...keyView(apiKey, slug), key }, `Created key ${apiKey.id} for ${slug} (shown once, store it now):\n  ${key}`);
    });
  } else if (sub === "list") {
    const { values } = parse(rest, { company: { type: "string" }, json: { type: "boolean" } }, "switchboard keys list [--company SLUG] [--json]");
    return withDeps(values.config, async (deps) => {
      const companies = new Map((await listCompanies({ db: deps.db })).map((c) => [c.id, c.slug]));
      const companyId = values.company ? (await companyBySlug(deps, values.company)).id : undefined;
      const rows = (await listApiKeys({ db: deps.db, companyId })).map((k) => keyView(k, companies.get(k.companyId) ?? "?"));
      print(
        values.json,
        rows,
        rows
          .map(
            (k) =>
              `${k.id}\t${k.company}\t${k.prefix}…\t${k.name}\t${k.scopes.join(",")}\t${k.revokedAt ? "revoked" : k.expiresAt && new Date(k.expiresAt) < new Date() ? "expired" : "active"}`,
          )
          .join("\n") || "(no keys)",
      );
    });
  } else if (sub === "revoke") {
    const { values, positionals } = parse(rest, {}, "switchboard keys revoke ID");
    const id = positionals[0];
    if (!id) throw new UsageError("usage: switchboard keys revoke ID");
    return withDeps(values.config, async (deps) => {
      await revokeApiKey({ db: deps.db, now: deps.now, id });
      process.stdout.write(`Revoked key ${id}\n`);
    });
  } else throw new UsageError("usage: switchboard keys create|list|revoke");
}

function keyView(k: Awaited<ReturnType<typeof listApiKeys>>[number], company: string) {
  return {
    id: k.id,
    company,
    name: k.name,
    prefix: k.prefix,
    scopes: k.scopes,
    allowedIps: k.allowedIps,
    rateLimit: k.rateLimit,
    expiresAt: k.expiresAt?.toISOString() ?? null,
    revokedAt: k.revokedAt?.toISOString() ?? null,
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    createdAt: k.createdAt.toISOString(),
  };
}

export function balanceCommand(args: string[]): void | Promise<void> {
  const [sub, ...rest] = args;
  const usage = "switchboard balance credit --company SLUG --amount 25.000000 [--json]";
  if (sub !== "credit") throw new UsageError(`usage: ${usage}`);
  const { values } = parse(rest, { company: { type: "string" }, amount: { type: "string" }, json: { type: "boolean" } }, usage);
  const slug = required(values.company, "--company", usage);
  const amount = amountArg(required(values.amount, "--amount", usage));
  if (amount <= 0) throw new UsageError("--amount must be greater than 0");
  return withDeps(values.config, async (deps) => {
    const company = await companyBySlug(deps, slug);
    const entry = await deps.ledger.credit({ companyId: company.id, amount, description: "operator credit" });
    const out = {
      company: slug,
      entryId: entry.id,
      credited: formatMicros(amount),
      balance: { amount: formatMicros(entry.balanceAfter), unit: deps.config.billing.currency },
    };
    print(values.json, out, `Credited ${out.credited} to ${slug}; balance ${out.balance.amount} ${out.balance.unit}`);
  });
}

export async function jobsCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === "list") {
    const { values } = parse(
      rest,
      { dead: { type: "boolean" }, json: { type: "boolean" }, limit: { type: "string" } },
      "switchboard jobs list [--dead] [--json]",
    );
    await withDeps(values.config, async (deps) => {
      const rows = await deps.queue.listJobs({ dead: values.dead, limit: values.limit ? Number(values.limit) : 100 });
      print(
        values.json,
        rows,
        rows.map((j) => `${j.id}\t${j.type}\t${j.status}\t${j.attempts}/${j.maxAttempts}\t${j.runAt}\t${j.lastError ?? ""}`).join("\n") || "(no jobs)",
      );
    });
  } else if (sub === "retry") {
    const { values, positionals } = parse(rest, {}, "switchboard jobs retry ID");
    const id = positionals[0];
    if (!id) throw new UsageError("usage: switchboard jobs retry ID");
    await withDeps(values.config, async (deps) => {
      if (!(await deps.queue.retryJob(id))) throw new UsageError(`no dead job with id ${id} (see: switchboard jobs list --dead)`);
      process.stdout.write(`Job ${id} queued again; a running appliance picks it up within a second\n`);
    });
  } else throw new UsageError("usage: switchboard jobs list|retry");
}

/**
 * `backup --to FILE`: a consistent, integrity-checked copy (db/migrate.ts writeCheckedCopy), safe while the
 * server runs.
 */
export function backupCommand(args: string[]): void {
  const usage = "switchboard backup --to FILE [--force]";
  const { values } = parse(args, { to: { type: "string" }, force: { type: "boolean" } }, usage);
  const target = resolve(required(values.to, "--to", usage));
  if (existsSync(target) && !values.force) throw new UsageError(`${target} exists; pass --force to replace it`);
  const config = loadCliConfig(values.config);
  refuseOnPostgres(config, "backup");
  const source = databasePath(config);
  if (!existsSync(source)) throw new UsageError(`no database at ${source}; nothing to back up`);
  const db = new Database(source, { readonly: true });
  let check: string;
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    check = writeCheckedCopy(db, target);
  } finally {
    db.close();
  }
  if (check !== "ok") throw new UsageError(`backup failed integrity_check: ${check}`);
  process.stdout.write(`Backup written to ${target}\n`);
}

/**
 * `restore --from FILE` (offline): checks FILE (integrity, a Switchboard database this binary's
 * schema knows), makes sure no process has the current database open (an exclusive lock, not waited for),
 * keeps the current file aside as `switchboard.db.replaced-<time>` and puts a copy of FILE in its place.
 * Pending migrations of an older backup run at the next start (after their own automatic backup).
 */
export function restoreCommand(args: string[]): void {
  const usage = "switchboard restore --from FILE";
  const { values } = parse(args, { from: { type: "string" } }, usage);
  const source = resolve(required(values.from, "--from", usage));
  const config = loadCliConfig(values.config);
  refuseOnPostgres(config, "restore");
  const target = databasePath(config);
  if (!existsSync(source)) throw new UsageError(`no file at ${source}`);
  if (source === target) throw new UsageError("--from is the database itself");

  const backup = new Database(source, { readonly: true });
  try {
    let check: string;
    try {
      check = (backup.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check;
    } catch (e) {
      throw new UsageError(`${source} cannot be read as a database (${(e as Error).message}); nothing was changed`);
    }
    if (check !== "ok") throw new UsageError(`${source} fails its integrity check (${check}); nothing was changed`);
    const schema = schemaState(backup);
    if (!schema.applied) throw new UsageError(`${source} is not a Switchboard database (no migration history); nothing was changed`);
    if (schema.newer) throw new UsageError(`${source} was written by a newer Switchboard than this one (${VERSION}); restore it with that version`);
  } finally {
    backup.close();
  }

  if (existsSync(target)) {
    const current = new Database(target);
    try {
      current.exec("PRAGMA busy_timeout = 0");
      current.exec("PRAGMA locking_mode = EXCLUSIVE");
      current.exec("BEGIN EXCLUSIVE");
      current.exec("COMMIT");
    } catch {
      throw new UsageError(`${target} is in use (is switchboard serve running?): stop the service first (systemctl stop switchboard)`);
    } finally {
      current.close();
    }
    const aside = `${target}.replaced-${new Date().toISOString().replace(/[:.]/g, "-")}`;
    renameSync(target, aside);
    for (const suffix of ["-wal", "-shm"]) if (existsSync(target + suffix)) renameSync(target + suffix, aside + suffix);
    process.stdout.write(`The replaced database is kept at ${aside}\n`);
  }
  copyFileSync(source, target);
  process.stdout.write(`Restored ${source} to ${target}; start the service again (pending migrations run at start-up)\n`);
}
