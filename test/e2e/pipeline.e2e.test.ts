/**
 * The pipeline module on the compiled binary: `license show` / `license verify` (exit codes, JSON), the
 * licensed routes opening when a license file appears (no restart), and a task reminder that falls due while
 * the appliance is down firing once after the next start.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { signLicense } from "../../scripts/sign-license";
import { run, serve, tempDir } from "./binary";

const devKey = readFileSync(join(import.meta.dir, "../fixtures/license-dev.private.key"), "utf8");
let dir: string;
let init: { configPath: string; dataDir: string; companyId: string; apiKey: string };
const licensePath = () => join(dir, "license.json");
const sign = (o: { company?: string; expiresAt?: string; modules?: string[] } = {}) =>
  signLicense({
    company: o.company ?? "default",
    modules: o.modules ?? ["pipeline", "sources"],
    expiresAt: o.expiresAt ?? "2099-01-01T00:00:00.000Z",
    privateKey: devKey,
  });

beforeAll(() => {
  dir = tempDir("sb-e2e-pipeline-");
  const r = run(["init", "--dir", dir, "--json"]);
  expect(r.code).toBe(0);
  init = JSON.parse(r.stdout);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("switchboard license", () => {
  test("show without a license file: exit 1, one line on stderr", () => {
    const r = run(["license", "show", "--config", init.configPath]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("status:   invalid");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(`no license file at ${licensePath()}`);
  });

  test("show --json with a valid license: company, modules, expiry; exit 0", () => {
    writeFileSync(licensePath(), sign());
    const r = run(["license", "show", "--json", "--config", init.configPath]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      file: licensePath(),
      status: "valid",
      reason: null,
      company: "default",
      modules: ["pipeline", "sources"],
      expiresAt: "2099-01-01T00:00:00.000Z",
    });
    const text = run(["license", "show", "--config", init.configPath]);
    expect(text.stdout).toContain("modules:  pipeline, sources");
  });

  test("verify FILE: valid → 0; expired, forged or missing → 1 with the reason", () => {
    const ok = join(dir, "ok.json");
    writeFileSync(ok, sign({ company: "acme", modules: ["pipeline"] }));
    const good = run(["license", "verify", ok, "--json"]);
    expect(good.code).toBe(0);
    expect(JSON.parse(good.stdout)).toMatchObject({ status: "valid", company: "acme", modules: ["pipeline"] });

    const expired = join(dir, "expired.json");
    writeFileSync(expired, sign({ expiresAt: "2020-01-01T00:00:00.000Z" }));
    const e = run(["license", "verify", expired]);
    expect(e.code).toBe(1);
    expect(e.stdout).toContain("status:   expired");
    expect(e.stderr).toContain("expired at 2020-01-01T00:00:00.000Z");

    const forged = join(dir, "forged.json");
    const file = JSON.parse(sign());
    file.payload = file.payload.replace("2099", "2199");
    writeFileSync(forged, JSON.stringify(file));
    const f = run(["license", "verify", forged]);
    expect(f.code).toBe(1);
    expect(f.stderr).toContain("signature is not valid");

    const missing = run(["license", "verify", join(dir, "nope.json")]);
    expect(missing.code).toBe(1);
    const usage = run(["license", "verify"]);
    expect(usage.code).toBe(1);
    expect(usage.stderr).toContain("usage: switchboard license verify FILE");
  });
});

describe("licensed routes and reminders on the binary", () => {
  test("no license → 403; a license file appears → 200 without a restart; a reminder due while down fires once after start-up", async () => {
    rmSync(licensePath(), { force: true });
    const h = { authorization: `Bearer ${init.apiKey}`, "content-type": "application/json" };
    let server = await serve(init.configPath);
    let taskId: string;
    let webhookId: string;
    let remindAt: number;
    try {
      const denied = await fetch(`${server.url}/api/public/v1/pipeline`, { headers: h });
      expect(denied.status).toBe(403);
      expect(((await denied.json()) as any).error.code).toBe("LICENSE_NOT_FOUND");
      writeFileSync(licensePath(), sign());
      const pipeline = await fetch(`${server.url}/api/public/v1/pipeline`, { headers: h });
      expect(pipeline.status).toBe(200);
      const me = (await (await fetch(`${server.url}/api/public/v1/me`, { headers: h })).json()) as any;
      expect(me.data.licensedModules[0]).toEqual({ module: "pipeline", licensed: true, code: null, expiresAt: "2099-01-01T00:00:00.000Z" });

      // A receiver that is never reachable: the delivery log still shows each task.due event once.
      const hook = await fetch(`${server.url}/api/public/v1/webhooks`, {
        method: "POST",
        headers: h,
        body: JSON.stringify({ url: "http://127.0.0.1:9/never", events: ["task.due"] }),
      });
      webhookId = ((await hook.json()) as any).data.id;
      const contact = await fetch(`${server.url}/api/public/v1/contacts`, {
        method: "POST",
        headers: h,
        body: JSON.stringify({ identities: [{ channel: "whatsapp", value: "+14155550155" }] }),
      });
      const contactId = ((await contact.json()) as any).data.contact.id;
      const rec = await fetch(`${server.url}/api/public/v1/records`, {
        method: "POST",
        headers: h,
        body: JSON.stringify({ title: "Deal", contactId, value: "250" }),
      });
      expect(rec.status).toBe(201);
      remindAt = Date.now() + 1500;
      const task = await fetch(`${server.url}/api/public/v1/tasks`, {
        method: "POST",
        headers: h,
        body: JSON.stringify({ title: "Call", recordId: ((await rec.json()) as any).data.id, remindAt: new Date(remindAt).toISOString() }),
      });
      expect(task.status).toBe(201);
      taskId = ((await task.json()) as any).data.id;
    } finally {
      expect(await server.stop()).toBe(0);
    }

    await Bun.sleep(Math.max(0, remindAt! - Date.now()) + 300);
    server = await serve(init.configPath);
    try {
      let task: any;
      for (let i = 0; i < 100 && !task?.remindedAt; i++) {
        const list = (await (await fetch(`${server.url}/api/public/v1/tasks`, { headers: h })).json()) as any;
        task = list.data.find((t: { id: string }) => t.id === taskId!);
        if (!task?.remindedAt) await Bun.sleep(50);
      }
      expect(task.remindedAt).toBe(new Date(remindAt!).toISOString());
      await Bun.sleep(500);
      const deliveries = (await (
        await fetch(`${server.url}/api/public/v1/webhooks/${webhookId!}/deliveries?eventType=task.due`, { headers: h })
      ).json()) as any;
      expect(deliveries.data).toHaveLength(1);
      expect(deliveries.data[0].payload.data.task).toMatchObject({ id: taskId!, remindedAt: new Date(remindAt!).toISOString() });
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
