/**
 * Answers built from reads wait until what they read is on disk. On SQLite a group commit is visible to
 * the connection's reads before its fsync has finished (src/db/group-commit.ts: the fsync runs off the event
 * loop; the group's own requests are answered after it). A GET that read such a row must not be answered
 * before it is durable either: a power loss could still take it back. (An Idempotency-Key replay waits in
 * the API guard, where it is answered early.)
 * `db.durable()` resolves at once when nothing is waiting for its fsync (and always on PostgreSQL).
 */
import { Elysia } from "elysia";
import type { Db } from "../../db/client";

export function durableReadsPlugin(db: Pick<Db, "durable">) {
  return new Elysia({ name: "durable-reads" })
    .onAfterHandle(async ({ request }) => {
      const method = request.method;
      if (method === "GET" || method === "HEAD") await db.durable();
    })
    .as("global");
}
