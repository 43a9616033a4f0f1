/**
 * Idempotency-Key (seed + DESIGN §4). Scoped to (API key, key string). A record holds method, path, a
 * SHA-256 fingerprint of the body and the stored 2xx response. The record is written in the same
 * transaction as the business write (`commit`), so a crash leaves either both or neither: a retry after a
 * crash either replays or runs the operation for the first time, never twice.
 * "Still processing" is tracked in memory, per process. Several processes on one database (instances on
 * PostgreSQL, DESIGN §15) may each begin the same key: `store` runs in the business transaction, under the
 * write lock, and refuses to replace another's fresh record — the later transaction rolls back with 409
 * IDEMPOTENCY_CONFLICT, so the operation runs once, and the client's next retry gets the replay.
 */
import type { Db } from "../../db/client";
import { AppError } from "../errors";
import { createIdempotencyKeysStore } from "./idempotency.store";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const PRINTABLE = /^[\x20-\x7E]{1,255}$/;

/** Accepts a bare key or its RFC 8941 sf-string form (`"abc"`). */
export function parseIdempotencyKey(raw: string): string {
  let key = raw;
  if (raw.length >= 2 && raw.startsWith('"') && raw.endsWith('"')) key = raw.slice(1, -1).replace(/\\(["\\])/g, "$1");
  if (!PRINTABLE.test(key))
    throw new AppError("VALIDATION_FAILED", "Idempotency-Key must be 1-255 printable ASCII characters", [
      { pointer: "header:Idempotency-Key", message: "must be 1-255 printable ASCII characters" },
    ]);
  return key;
}

/** Order-independent JSON so the same body with keys in another order is the same request. */
export function fingerprint(method: string, path: string, body: unknown): string {
  return new Bun.CryptoHasher("sha256").update(`${method} ${path}\n${stableJson(body)}`).digest("hex");
}

function stableJson(v: unknown): string {
  if (v === undefined) return "";
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  // Uploaded files (multipart): their identity, so another file under the same key is a conflict.
  if (v instanceof Blob) return JSON.stringify({ file: (v as File).name ?? "", size: v.size, type: v.type });
  if (Array.isArray(v)) return `[${v.map(stableJson).join(",")}]`;
  const entries = Object.entries(v as Record<string, unknown>)
    .filter(([, x]) => x !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${stableJson(x)}`).join(",")}}`;
}

export interface IdempotencyClaim {
  apiKeyId: string;
  key: string;
  method: string;
  path: string;
  fingerprint: string;
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;

export function createIdempotencyStore({ db, now }: { db: Db; now: () => Date }) {
  const records = createIdempotencyKeysStore(db);
  const inflight = new Set<string>();
  const id = (c: { apiKeyId: string; key: string }) => `${c.apiKeyId}\u0000${c.key}`;

  /**
   * Stores the response (replacing only an expired record); call inside the business transaction. False when
   * a fresh record of the key is there: another process stored it since `begin` (see the header).
   */
  async function store(claim: IdempotencyClaim, status: number, body: unknown): Promise<boolean> {
    const at = now();
    const record = {
      apiKeyId: claim.apiKeyId,
      key: claim.key,
      method: claim.method,
      path: claim.path,
      fingerprint: claim.fingerprint,
      status,
      body: JSON.stringify(body),
      createdAt: at,
    };
    return await records.upsertUnlessFresh(record, new Date(at.getTime() - IDEMPOTENCY_TTL_MS));
  }

  return {
    /**
     * Looks the key up. Returns the stored response to replay, or null after marking the key in flight
     * (the caller must `release` it when the request ends). Throws IDEMPOTENCY_CONFLICT. (The in-flight check
     * and mark run together after the read: two requests of one key cannot both pass it.)
     */
    async begin(claim: IdempotencyClaim): Promise<{ status: number; body: string } | null> {
      const row = await records.find(claim.apiKeyId, claim.key);
      if (row && row.createdAt.getTime() > now().getTime() - IDEMPOTENCY_TTL_MS) {
        if (row.method !== claim.method || row.path !== claim.path || row.fingerprint !== claim.fingerprint)
          throw new AppError("IDEMPOTENCY_CONFLICT", "This Idempotency-Key was used with a different request", [
            { pointer: "header:Idempotency-Key", message: "already used with a different method, path or body" },
          ]);
        return { status: row.status, body: row.body };
      }
      if (inflight.has(id(claim)))
        throw new AppError("IDEMPOTENCY_CONFLICT", "A request with this Idempotency-Key is still being processed", [
          { pointer: "header:Idempotency-Key", message: "the original request is still in progress" },
        ]);
      inflight.add(id(claim));
      return null;
    },
    store,
    /** `store` in the business transaction: 409 (the transaction rolls back) when another process stored first. */
    async storeOrConflict(claim: IdempotencyClaim, status: number, body: unknown): Promise<void> {
      if (!(await store(claim, status, body)))
        throw new AppError("IDEMPOTENCY_CONFLICT", "A request with this Idempotency-Key was processed at the same time", [
          { pointer: "header:Idempotency-Key", message: "another request with this key was stored first; retry to get its response" },
        ]);
    },
    release(claim: IdempotencyClaim): void {
      inflight.delete(id(claim));
    },
    /** Deletes records older than 24 h (croner job). */
    sweep(): Promise<number> {
      return records.deleteOlderThan(new Date(now().getTime() - IDEMPOTENCY_TTL_MS));
    },
  };
}
