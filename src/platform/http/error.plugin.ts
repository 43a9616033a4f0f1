/**
 * Every error becomes `{"error": {code, message, requestId, details}}` here and nowhere else: thrown
 * AppErrors, Elysia validation and parse errors (422 VALIDATION_FAILED with a pointer per problem),
 * unknown routes (404 NOT_FOUND), and anything unexpected (500 INTERNAL, logged, nothing leaked).
 */
import { Elysia, ValidationError } from "elysia";
import { AppError, type ErrorDetail } from "../errors";
import type { Logger } from "../logger";
import { requestFacts } from "./request-context";
import type { RouteTable } from "./route-table";

export function errorBody(requestId: string | undefined, code: string, message: string, details: ErrorDetail[] = []) {
  return { error: { code, message, requestId: requestId ?? null, details } };
}

function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

/** Elysia/TypeBox validation errors → our details; `type` says where the value came from. */
function validationDetails(error: ValidationError): ErrorDetail[] {
  const where = (error as unknown as { type: string }).type;
  const prefix = where === "query" ? "query:" : where === "headers" ? "header:" : where === "params" ? "path:" : "";
  const seen = new Set<string>();
  const out: ErrorDetail[] = [];
  for (const e of error.all as { path: string; message: string; summary?: string }[]) {
    const pointer = prefix ? `${prefix}${e.path.replace(/^\//, "")}` : e.path || "/";
    const key = `${pointer}|${e.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ pointer, message: e.message });
  }
  // A union mismatch reports every branch; keep the messages short but complete.
  return out.slice(0, 50);
}

export function errorPlugin({ log, routes }: { log: Logger; routes?: RouteTable }) {
  return new Elysia({ name: "errors" })
    .onError(({ code, error, request, set }) => {
      const requestId = requestFacts(request)?.requestId;
      const headers = { ...(set.headers as Record<string, string>) };
      // NB! Also on `set`: the access log and metrics read the status there, and a Response built here
      // is not always what they see (unmatched routes).
      const json = (status: number, body: unknown, extra: Record<string, string> = {}) => {
        set.status = status;
        return jsonResponse(status, body, extra);
      };
      if (error instanceof AppError) {
        return json(error.status, errorBody(requestId, error.code, error.message, error.details), { ...headers, ...error.headers });
      }
      switch (code) {
        case "VALIDATION":
          return json(422, errorBody(requestId, "VALIDATION_FAILED", "The request is invalid", validationDetails(error as ValidationError)), headers);
        case "PARSE":
          return json(422, errorBody(requestId, "VALIDATION_FAILED", "The request body is not valid JSON", [{ pointer: "/", message: "malformed JSON" }]), headers);
        case "NOT_FOUND": {
          // A known path asked with another method: 405 with the methods it takes.
          const methods = routes?.methodsFor(new URL(request.url).pathname).filter((m) => m !== "*") ?? [];
          if (methods.length && !methods.includes(request.method)) {
            const allow = [...methods, ...(methods.includes("GET") && !methods.includes("HEAD") ? ["HEAD"] : [])].sort().join(", ");
            return json(405, errorBody(requestId, "METHOD_NOT_ALLOWED", `${request.method} is not allowed here; use ${allow}`), { ...headers, allow });
          }
          return json(404, errorBody(requestId, "NOT_FOUND", "No such route"), headers);
        }
        case "INVALID_COOKIE_SIGNATURE":
        case "INVALID_FILE_TYPE":
          return json(422, errorBody(requestId, "VALIDATION_FAILED", "The request is invalid"), headers);
      }
      log.error({ requestId, err: error, path: new URL(request.url).pathname }, "unhandled error");
      return json(500, errorBody(requestId, "INTERNAL", "Internal server error"), headers);
    })
    .as("global");
}
