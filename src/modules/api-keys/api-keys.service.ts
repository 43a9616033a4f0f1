/**
 * API keys: `sb_live_<40 base62>`, shown once; stored as SHA-256 + a display prefix.
 */
import type { Db } from "../../db/client";
import { DetailCollector, AppError } from "../../platform/errors";
import { hashKey, type KeyPrincipal } from "../../platform/http/api-guard.plugin";
import { parseCidr } from "../../platform/http/ip-allow";
import { isScope } from "../../platform/http/scopes";
import { newId, randomToken } from "../../platform/ids";
import { apiKeysStore, type ApiKeyRow } from "./api-keys.repository";
import { companyOfKey } from "../companies/companies.service";
import { createReadCache } from "../../db/read-cache";

export type { ApiKeyRow };

export async function createApiKey({
  db,
  now,
  companyId,
  name = "default",
  scopes = ["*"],
  allowedIps = [],
  expiresAt = null,
  rateLimit = null,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  name?: string;
  scopes?: string[];
  allowedIps?: string[];
  expiresAt?: Date | null;
  rateLimit?: number | null;
}): Promise<{ apiKey: ApiKeyRow; key: string }> {
  const problems = new DetailCollector();
  if (!scopes.length) problems.add("/scopes", "at least one scope, or *");
  scopes.forEach((s, i) => {
    if (s !== "*" && !isScope(s)) problems.add(`/scopes/${i}`, `unknown scope "${s}"`);
  });
  allowedIps.forEach((c, i) => {
    if (!parseCidr(c)) problems.add(`/allowedIps/${i}`, `"${c}" is not an IPv4/IPv6 address or CIDR`);
  });
  if (expiresAt && Number.isNaN(expiresAt.getTime())) problems.add("/expiresAt", "not a valid date-time");
  if (rateLimit !== null && !(rateLimit > 0)) problems.add("/rateLimit", "must be a positive number of requests per second");
  problems.throwIfAny(problems.details.map((d) => d.message).join("; "));

  const key = `sb_live_${randomToken()}`;
  const apiKey: ApiKeyRow = {
    id: newId(),
    companyId,
    name,
    prefix: key.slice(0, 12),
    hash: hashKey(key),
    scopes,
    allowedIps,
    rateLimit,
    expiresAt,
    revokedAt: null,
    lastUsedAt: null,
    createdAt: now(),
  };
  await apiKeysStore(db).insertKey(apiKey);
  return { apiKey, key };
}

export async function listApiKeys({ db, companyId }: { db: Db; companyId?: string }): Promise<ApiKeyRow[]> {
  return await apiKeysStore(db).list(companyId);
}

export async function revokeApiKey({ db, now, id }: { db: Db; now: () => Date; id: string }): Promise<ApiKeyRow> {
  const store = apiKeysStore(db);
  const row = await store.byId(id);
  if (!row) throw new AppError("NOT_FOUND", `no API key with id ${id}`);
  if (!row.revokedAt) await store.revoke(id, now());
  return { ...row, revokedAt: row.revokedAt ?? now() };
}

/**
 * Key lookup for the API guard (one prepared statement: this runs on every request), and `last_used_at`
 * bookkeeping. NB! last_used_at is collected in memory and flushed in one transaction every few seconds:
 * with synchronous=FULL a write per request would cost an fsync per request.
 */
export function createKeyResolver({ db, now }: { db: Db; now: () => Date }) {
  const store = apiKeysStore(db);
  const used = new Map<string, Date>();
  // Revocation and expiry edits come from the CLI (another process) and must hold for the very next request:
  // the cache checks PRAGMA data_version once per event-loop turn, at the turn's first lookup — every
  // request of the turn arrived before that check (bench/RESULTS.md, "Key cache", "Tenth round").
  const cache = createReadCache<string, KeyPrincipal | null>(db, { perTurn: true });
  async function load(hash: string): Promise<KeyPrincipal | null> {
    const row = await store.byHash(hash);
    if (!row) return null;
    return toPrincipal(row, (await companyOfKey({ db, id: row.companyId })).slug);
  }
  return {
    /**
     * NB! The API guard's hot path: a cached key (and its cached company) is answered without a promise; only
     * a miss awaits the store. An unknown key is not cached (null), so a key created later works at once.
     */
    resolveKey(hash: string): KeyPrincipal | null | Promise<KeyPrincipal | null> {
      const principal = cache.lookup(hash, () => load(hash));
      if (principal instanceof Promise)
        return principal.then((p) => {
          if (!p) cache.invalidate(hash);
          return p;
        });
      if (!principal) cache.invalidate(hash);
      return principal;
    },
    markKeyUsed(keyId: string): void {
      used.set(keyId, now());
    },
    async flushUsage(): Promise<number> {
      if (!used.size) return 0;
      const batch = [...used];
      used.clear();
      await db.unit(async () => {
        for (const [id, at] of batch) await store.setLastUsed(id, at);
      });
      return batch.length;
    },
  };
}

function toPrincipal(row: ApiKeyRow, companySlug: string): KeyPrincipal {
  return {
    keyId: row.id,
    companyId: row.companyId,
    companySlug,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes,
    allowedIps: row.allowedIps,
    expiresAt: row.expiresAt,
    revokedAt: row.revokedAt,
    rateLimit: row.rateLimit,
  };
}
