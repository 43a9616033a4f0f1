/**
 * Table-driven API scenarios (PocketBase style): each row is a request and what must come back.
 * `contains` is a partial deep match against the JSON body: every key given must be present and equal
 * (recursively; arrays compare element-wise by position for the elements given).
 */
import { expect, test } from "bun:test";
import type { TestApp } from "./test-app";

export interface Scenario {
  name: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  raw?: string;
  /** null = send no key; a string = send that key; undefined = the admin key. */
  key?: string | null;
  status: number;
  contains?: unknown;
  /** Response headers that must be present (value: exact string, or true for "present"). */
  responseHeaders?: Record<string, string | true>;
  setup?: (app: TestApp) => void | Promise<void>;
  check?: (res: { status: number; body: any; headers: Headers }, app: TestApp) => void | Promise<void>;
}

/** A scenario that may leave its method and URL to `rowsOf`. */
export type ScenarioRow = Omit<Scenario, "method" | "url"> & Partial<Pick<Scenario, "method" | "url">>;

/**
 * Rows of one operation: each gets `method` and `url` unless it names its own. NB! A row's getters (a `body`
 * built once the app exists) stay getters: its properties are copied as they are defined, not read.
 */
export const rowsOf = (method: string, url: string, rows: ScenarioRow[]): Scenario[] =>
  rows.map((r) => Object.defineProperties({ method, url } as Scenario, Object.getOwnPropertyDescriptors(r)));

export function expectContains(actual: unknown, expected: unknown, path = "$"): void {
  if (expected === null || typeof expected !== "object") {
    if (actual !== expected) throw new Error(`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) throw new Error(`${path}: expected an array, got ${JSON.stringify(actual)}`);
    expected.forEach((e, i) => expectContains(actual[i], e, `${path}[${i}]`));
    return;
  }
  if (actual === null || typeof actual !== "object") throw new Error(`${path}: expected an object, got ${JSON.stringify(actual)}`);
  for (const [k, v] of Object.entries(expected)) expectContains((actual as Record<string, unknown>)[k], v, `${path}.${k}`);
}

/** Registers one bun test per scenario against the app `getApp()` returns. */
export function runScenarios(getApp: () => TestApp, scenarios: Scenario[]): void {
  for (const s of scenarios) {
    test(s.name, async () => {
      const app = getApp();
      await s.setup?.(app);
      const res = await app.request(s.method, s.url, { body: s.body, raw: s.raw, headers: s.headers, key: s.key });
      if (res.status !== s.status) throw new Error(`expected status ${s.status}, got ${res.status}: ${JSON.stringify(res.body)}`);
      if (s.contains !== undefined) expectContains(res.body, s.contains);
      for (const [h, v] of Object.entries(s.responseHeaders ?? {})) {
        const got = res.headers.get(h);
        if (v === true) expect(got).not.toBeNull();
        else expect(got).toBe(v);
      }
      await s.check?.(res, app);
    });
  }
}
