import { describe, expect, test } from "bun:test";
import { parseRetryAfter } from "../../platform/http/retry-after";
import { failureFromGraphResponse, failureFromNetworkError, failureFromWebhookError, GRAPH_ERROR_RULES } from "./meta.errors";

const now = new Date("2025-01-15T12:00:00.000Z");
const graphBody = (code: number, subcode?: number, message = "msg") => ({
  error: { message, type: "OAuthException", code, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: "Az" },
});
const map = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  failureFromGraphResponse({ status, body, headers: new Headers(headers), now });

describe("Graph error mapping table", () => {
  const cases: { code: number; subcode?: number; status?: number; reason: string; retry: boolean; accountStatus?: string; providerCode: string }[] = [
    { code: 131047, reason: "MESSAGING_WINDOW_CLOSED", retry: false, providerCode: "131047" },
    { code: 130429, reason: "RATE_LIMITED", retry: true, providerCode: "130429" },
    { code: 130429, status: 429, reason: "RATE_LIMITED", retry: true, providerCode: "130429" },
    { code: 131056, reason: "RATE_LIMITED", retry: true, providerCode: "131056" },
    { code: 80007, reason: "RATE_LIMITED", retry: true, providerCode: "80007" },
    { code: 613, reason: "RATE_LIMITED", retry: true, providerCode: "613" },
    { code: 4, reason: "RATE_LIMITED", retry: true, providerCode: "4" },
    { code: 190, status: 401, reason: "AUTH_FAILED", retry: false, accountStatus: "auth_failed", providerCode: "190" },
    { code: 190, subcode: 463, status: 401, reason: "AUTH_FAILED", retry: false, accountStatus: "auth_failed", providerCode: "190/463" },
    { code: 131026, reason: "RECIPIENT_INVALID", retry: false, providerCode: "131026" },
    { code: 132000, reason: "TEMPLATE_INVALID", retry: false, providerCode: "132000" },
    { code: 132001, reason: "TEMPLATE_INVALID", retry: false, providerCode: "132001" },
    { code: 132015, reason: "TEMPLATE_INVALID", retry: false, providerCode: "132015" },
    { code: 132016, reason: "TEMPLATE_INVALID", retry: false, providerCode: "132016" },
    { code: 551, reason: "USER_BLOCKED", retry: false, providerCode: "551" },
    { code: 551, subcode: 1545041, reason: "USER_BLOCKED", retry: false, providerCode: "551/1545041" },
    { code: 10, subcode: 2018278, reason: "MESSAGING_WINDOW_CLOSED", retry: false, providerCode: "10/2018278" },
    { code: 10, subcode: 2534022, reason: "MESSAGING_WINDOW_CLOSED", retry: false, providerCode: "10/2534022" },
    { code: 100, reason: "PROVIDER_REJECTED", retry: false, providerCode: "100" },
    { code: 100, subcode: 2018001, reason: "RECIPIENT_INVALID", retry: false, providerCode: "100/2018001" },
    { code: 100, subcode: 33, reason: "PROVIDER_REJECTED", retry: false, providerCode: "100/33" }, // unknown subcode → the code's rule
    { code: 131053, reason: "MEDIA_INVALID", retry: false, providerCode: "131053" },
    { code: 131000, status: 500, reason: "PROVIDER_UNAVAILABLE", retry: true, providerCode: "131000" },
  ];
  for (const c of cases) {
    test(`${c.code}${c.subcode ? `/${c.subcode}` : ""} (HTTP ${c.status ?? 400}) → ${c.reason}${c.retry ? " retry" : ""}`, () => {
      const failure = map(c.status ?? 400, graphBody(c.code, c.subcode));
      expect(failure.reason).toBe(c.reason as never);
      expect(failure.retry).toBe(c.retry);
      expect(failure.providerCode).toBe(c.providerCode);
      expect(failure.accountStatus).toBe(c.accountStatus as never);
      expect(failure.ok).toBe(false);
    });
  }

  test("the table is a table: every rule has a reason and a retry flag", () => {
    for (const [key, rule] of Object.entries(GRAPH_ERROR_RULES)) {
      expect(key).toMatch(/^\d+(\/\d+)?$/);
      expect(typeof rule.retry).toBe("boolean");
    }
  });

  test("error_data.details is kept in the message for operators", () => {
    const failure = map(400, {
      error: {
        message: "(#131047) Re-engagement message",
        code: 131047,
        error_data: { messaging_product: "whatsapp", details: "Message failed to send because more than 24 hours have passed" },
      },
    });
    expect(failure.message).toBe("(#131047) Re-engagement message: Message failed to send because more than 24 hours have passed");
  });

  test("unknown code: is_transient → retry; else by HTTP status", () => {
    expect(map(400, { error: { message: "x", code: 999999, is_transient: true } })).toMatchObject({
      retry: true,
      reason: "PROVIDER_UNAVAILABLE",
      providerCode: "999999",
    });
    expect(map(400, graphBody(999999))).toMatchObject({ retry: false, reason: "PROVIDER_REJECTED" });
    expect(map(503, graphBody(999999))).toMatchObject({ retry: true, reason: "PROVIDER_UNAVAILABLE" });
  });

  test("non-Graph bodies: 5xx and 429 retry, 401 is an auth failure, other 4xx rejected", () => {
    expect(map(502, "<html>Bad Gateway</html>")).toMatchObject({ retry: true, reason: "PROVIDER_UNAVAILABLE", providerCode: "http_502" });
    expect(map(429, undefined, { "retry-after": "7" })).toMatchObject({ retry: true, reason: "RATE_LIMITED", retryAfterMs: 7000 });
    expect(map(401, undefined)).toMatchObject({ retry: false, reason: "AUTH_FAILED", accountStatus: "auth_failed" });
    expect(map(404, undefined)).toMatchObject({ retry: false, reason: "PROVIDER_REJECTED" });
  });

  test("network errors retry as PROVIDER_UNAVAILABLE", () => {
    expect(failureFromNetworkError(new TypeError("ECONNRESET"))).toMatchObject({
      ok: false,
      retry: true,
      reason: "PROVIDER_UNAVAILABLE",
      providerCode: "network",
    });
  });

  test("Retry-After in seconds or as an HTTP date", () => {
    expect(parseRetryAfter({ header: "3", now })).toBe(3000);
    expect(parseRetryAfter({ header: "Wed, 15 Jan 2025 12:00:10 GMT", now })).toBe(10_000);
    expect(parseRetryAfter({ header: null, now })).toBeUndefined();
    expect(parseRetryAfter({ header: "soon", now })).toBeUndefined();
  });

  test("webhook errors[] (async failures) use the same table", () => {
    expect(failureFromWebhookError({ code: 131047, title: "Re-engagement message", error_data: { details: "more than 24 hours" } })).toEqual({
      reason: "MESSAGING_WINDOW_CLOSED",
      providerCode: "131047",
      message: "Re-engagement message: more than 24 hours",
    });
    expect(failureFromWebhookError({ code: 131026, title: "Message undeliverable" }).reason).toBe("RECIPIENT_INVALID");
    expect(failureFromWebhookError({ code: 424242, title: "new" }).reason).toBe("PROVIDER_REJECTED");
  });
});
