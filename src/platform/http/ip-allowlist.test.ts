/** A key's IP allow-list against the connection's real address (HTTP on loopback, not app.handle). */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
let base: string;
beforeAll(async () => {
  app = await createTestApp();
  app.app.listen({ port: 0, hostname: "127.0.0.1" });
  base = `http://127.0.0.1:${app.app.server!.port}/api/public/v1`;
});
afterAll(async () => {
  await app.app.stop();
  await app.close();
});

test.each([
  ["a key allowing only 10.0.0.0/8", ["10.0.0.0/8"], 403, "IP_NOT_ALLOWED"],
  ["a key allowing 127.0.0.1", ["127.0.0.1"], 200, null],
  ["a key allowing 127.0.0.0/8 among others", ["10.0.0.0/8", "127.0.0.0/8"], 200, null],
  ["a key without an allow-list", [], 200, null],
] as const)("%s, called from 127.0.0.1", async (_name, allowedIps, status, code) => {
  const { key } = await app.newKey({ name: `k${allowedIps.length}${status}`, allowedIps: [...allowedIps] });
  const res = await fetch(`${base}/me`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(status);
  if (code) expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
});
