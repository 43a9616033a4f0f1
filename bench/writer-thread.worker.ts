/**
 * Issue 40's prototype, the writer's side (bench/writer-thread.ts): what owns the one writer connection and
 * runs the job loop (dispatch, the sandbox's reports), and takes POST /messages' units from the HTTP thread a
 * turn's worth at a time: a batch's sends are started together, so they share one group commit, and their
 * answers go back in one message once that group is durable. Batches travel as one JSON string each way
 * (cheaper to pass between threads than objects: measured in bench/RESULTS.md).
 *
 * As a Worker's script it serves the HTTP thread's messages; `createWriter` runs the same on the caller's own
 * thread (the benchmark's `batched` mode: the hand-over's cost without the second thread).
 */
import { buildDeps } from "../src/deps";
import { loadConfig } from "../src/config/config.load";
import { createLogger } from "../src/platform/logger";
import { wireModules } from "../src/wire";
import { sendMessage } from "../src/modules/messages/messages.service";
import { acceptedView } from "../src/modules/messages/messages.views";
import { AppError } from "../src/platform/errors";

type Call = { id: number; companyId: string; apiKeyId: string; input: unknown };

export async function createWriter({ configPath, jobs }: { configPath: string; jobs: boolean }) {
  const deps = await buildDeps({ config: loadConfig({ path: configPath }), log: createLogger({ level: "warn" }) });
  await wireModules(deps);
  if (jobs) {
    await deps.queue.releaseOrphans();
    deps.queue.start();
  }
  /** A batch of calls (JSON) → their answers (JSON), once their group commit is durable. */
  return async (batch: string): Promise<string> => {
    const out = await Promise.all(
      (JSON.parse(batch) as Call[]).map((c) =>
        sendMessage(deps, { companyId: c.companyId, apiKeyId: c.apiKeyId, input: c.input as never }).then(
          (v) => ({ id: c.id, ok: true, value: acceptedView(v) }),
          (err: unknown) =>
            err instanceof AppError
              ? { id: c.id, ok: false, code: err.code, message: err.message, details: err.details }
              : { id: c.id, ok: false, code: "INTERNAL", message: String(err) },
        ),
      ),
    );
    return JSON.stringify(out);
  };
}

declare const self: Worker;
if (typeof self !== "undefined" && !Bun.isMainThread) {
  let handle: (batch: string) => Promise<string>;
  self.onmessage = async (e: MessageEvent) => {
    if (!handle) {
      handle = await createWriter(JSON.parse(e.data as string));
      self.postMessage("ready");
    } else self.postMessage(await handle(e.data as string));
  };
}
