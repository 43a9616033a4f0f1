/** Licensed modules: the signed license file, checked per request, replaced without a restart. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Elysia } from "elysia";
import { generateKeyPairSync } from "node:crypto";
import { signLicense } from "../../../scripts/sign-license";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { errorPlugin } from "../http/error.plugin";
import { silentLogger } from "../logger";
import { createLicenseChecker } from "./license";
import { LICENSE_PUBLIC_KEY } from "./license.key";

const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");
const FUTURE = "2099-01-01T00:00:00.000Z";

let app: TestApp;
let licensed: { handle(request: Request): Promise<Response> };
let path: string;
beforeAll(async () => {
  app = await createTestApp();
  path = app.config.license.file;
  // A licensed route as a module would declare it: the guard's `license` option.
  licensed = new Elysia().use(errorPlugin({ log: silentLogger })).use(
    new Elysia({ prefix: "/api/public/v1" })
      .use(app.deps.guard)
      .get("/records", () => ({ data: [] }), { scope: "pipeline:read", license: "pipeline" })
      .get("/sources", () => ({ data: [] }), { scope: "sources:read", license: "sources" }),
  );
});
afterAll(() => app.close());

const call = async (url: string) => {
  const res = await licensed.handle(new Request(`http://localhost/api/public/v1${url}`, { headers: { authorization: `Bearer ${app.key}` } }));
  return { status: res.status, body: (await res.json()) as any };
};
const write = (o: { company?: string; modules?: string[]; expiresAt?: string; key?: string }) =>
  writeFileSync(
    path,
    signLicense({ company: o.company ?? "default", modules: o.modules ?? ["pipeline"], expiresAt: o.expiresAt ?? FUTURE, privateKey: o.key ?? devKey }),
  );

describe("licensed routes through the API guard", () => {
  test("no license file: 403 LICENSE_NOT_FOUND", async () => {
    rmSync(path, { force: true });
    expect(await call("/records")).toMatchObject({ status: 403, body: { error: { code: "LICENSE_NOT_FOUND" } } });
  });

  test("a valid license opens its modules only: FEATURE_NOT_LICENSED for the others", async () => {
    write({ modules: ["pipeline"] });
    expect((await call("/records")).status).toBe(200);
    expect(await call("/sources")).toMatchObject({ status: 403, body: { error: { code: "FEATURE_NOT_LICENSED" } } });
  });

  test("replacing the file takes effect on the next request (no restart)", async () => {
    write({ modules: ["pipeline", "sources"] });
    expect((await call("/sources")).status).toBe(200);
    write({ modules: ["pipeline", "sources"], expiresAt: "2020-01-01T00:00:00.000Z" });
    expect(await call("/records")).toMatchObject({ status: 403, body: { error: { code: "LICENSE_EXPIRED" } } });
  });

  test("another company's license, a forged signature, a tampered payload or garbage: LICENSE_NOT_FOUND", async () => {
    write({ company: "acme" });
    expect((await call("/records")).body.error.code).toBe("LICENSE_NOT_FOUND");
    const other = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "der" }).toString("base64");
    write({ key: other });
    expect((await call("/records")).body.error.code).toBe("LICENSE_NOT_FOUND");
    write({});
    const file = JSON.parse(readFileSync(path, "utf8"));
    file.payload = file.payload.replace('"pipeline"', '"pipeline","sources"');
    writeFileSync(path, JSON.stringify(file));
    expect((await call("/sources")).body.error.code).toBe("LICENSE_NOT_FOUND");
    writeFileSync(path, "not json");
    expect((await call("/records")).body.error.code).toBe("LICENSE_NOT_FOUND");
  });

  test("the key check still comes first: no key → 401", async () => {
    write({});
    const res = await licensed.handle(new Request("http://localhost/api/public/v1/records"));
    expect(res.status).toBe(401);
  });
});

test("the development build embeds the development key (its private half is the test fixture)", () => {
  const checker = createLicenseChecker({ path: "/nonexistent", publicKey: LICENSE_PUBLIC_KEY, now: () => new Date() });
  expect(() => checker.check("default", "pipeline")).toThrow("no license file");
});
