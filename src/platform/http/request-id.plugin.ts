/**
 * X-Request-Id: echoed when valid (8–100 of [A-Za-z0-9._:-]), generated when absent, 422 when malformed.
 * Always in the response and in every log line of the request. Probes (/healthz, /readyz) are never refused
 * for their request id: a malformed one is replaced.
 */
import { Elysia } from "elysia";
import { AppError } from "../errors";
import { newId } from "../ids";
import { setRequestFacts } from "./request-context";

const VALID = /^[A-Za-z0-9._:-]{8,100}$/;
const PROBES = new Set(["/healthz", "/readyz"]);

export const requestIdPlugin = new Elysia({ name: "request-id" })
  .onRequest(({ request, set }) => {
    const given = request.headers.get("x-request-id");
    const requestId = given !== null && VALID.test(given) ? given : newId();
    setRequestFacts(request, { requestId, startedAt: performance.now() });
    set.headers["x-request-id"] = requestId;
    if (given !== null && !VALID.test(given) && !PROBES.has(new URL(request.url).pathname)) {
      throw new AppError("VALIDATION_FAILED", "X-Request-Id must be 8-100 characters of letters, digits and . _ : -", [
        { pointer: "header:X-Request-Id", message: "must match [A-Za-z0-9._:-]{8,100}" },
      ]);
    }
  })
  .as("global");
