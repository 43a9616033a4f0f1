/**
 * Issue 40's prototype, the HTTP thread (bench/writer-thread.ts): the appliance's own guard, validation and
 * error envelope in front of POST /messages, with the send's unit run either here, as `serve` runs it
 * (`--mode local`: the job loop on this thread too), or on the writer's thread (`--mode thread`:
 * writer-thread.worker.ts owns the writer connection and the job loop; this thread only reads — the guard's
 * API key — through a connection of its own). Not the appliance: a measurement of the hand-over.
 */
import { Elysia } from "elysia";
import { parseArgs } from "node:util";
import { buildDeps } from "../src/deps";
import { loadConfig } from "../src/config/config.load";
import { createLogger } from "../src/platform/logger";
import { wireModules } from "../src/wire";
import { errorPlugin } from "../src/platform/http/error.plugin";
import { API_PREFIX } from "../src/platform/http/api-guard.plugin";
import { SendMessageBody } from "../src/modules/messages/messages.model";
import { sendMessage } from "../src/modules/messages/messages.service";
import { acceptedView } from "../src/modules/messages/messages.views";
import { AppError, type ErrorCode } from "../src/platform/errors";
import { createWriter } from "./writer-thread.worker";

const { values } = parseArgs({
  options: { config: { type: "string" }, port: { type: "string" }, mode: { type: "string", default: "local" }, jobs: { type: "string", default: "on" } },
});
const config = loadConfig({ path: values.config! });
const log = createLogger({ level: "warn" });
const deps = await buildDeps({ config, log });
const jobs = values.jobs === "on";

const stats = { batches: 0, calls: 0 };
type Answer = { id: number; ok: true; value: unknown } | { id: number; ok: false; code: string; message: string; details?: [] };
let send: (c: { companyId: string; apiKeyId: string; input: unknown }) => Promise<unknown>;
if (values.mode === "thread" || values.mode === "batched") {
  // thread: the writer on a Worker; batched: the same hand-over (JSON both ways, one batch a turn) on this thread.
  let post: (batch: string) => void;
  const answered = (answers: string) => {
    for (const a of JSON.parse(answers) as Answer[]) {
      const w = waiting.get(a.id)!;
      waiting.delete(a.id);
      if (a.ok) w.resolve(a.value);
      else w.reject(new AppError(a.code as ErrorCode, a.message, a.details ?? []));
    }
  };
  const init = { configPath: values.config!, jobs };
  if (values.mode === "thread") {
    const worker = new Worker(new URL("./writer-thread.worker.ts", import.meta.url).href);
    await new Promise<void>((resolve) => {
      worker.onmessage = () => resolve();
      worker.postMessage(JSON.stringify(init));
    });
    worker.onmessage = (e: MessageEvent) => answered(e.data as string);
    post = (batch) => worker.postMessage(batch);
  } else {
    const handle = await createWriter(init);
    post = (batch) => void handle(batch).then(answered);
  }
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let next = 0;
  let outbox: unknown[] = [];
  process.on("exit", () => console.error(`writer: ${stats.batches} batches, ${(stats.calls / stats.batches).toFixed(1)} calls each`));
  send = (c) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      if (outbox.length === 0)
        setImmediate(() => {
          const batch = outbox;
          outbox = [];
          stats.batches++;
          stats.calls += batch.length;
          post(JSON.stringify(batch));
        });
      outbox.push({ id, ...c });
    });
} else {
  await wireModules(deps);
  if (jobs) {
    await deps.queue.releaseOrphans();
    deps.queue.start();
  }
  send = async (c) => acceptedView(await sendMessage(deps, c as never));
}

new Elysia()
  .use(errorPlugin({ log }))
  .get("/healthz", () => "ok")
  .group(API_PREFIX, (api) =>
    api.use(deps.guard).post(
      "/messages",
      async ({ body, auth, set }) => {
        const data = await send({ companyId: auth.companyId, apiKeyId: auth.keyId, input: body });
        set.status = 202;
        return { data };
      },
      { scope: "messages:send", body: SendMessageBody },
    ),
  )
  .listen({ port: Number(values.port), hostname: "127.0.0.1" });
process.on("SIGTERM", () => process.exit(0)); // (a profile, --cpu-prof, is written at exit)
