/** Response schemas shared by every route, for validation-free documentation in the OpenAPI document. */
import { t, type TSchema } from "elysia";

export const ErrorEnvelope = t.Object(
  {
    error: t.Object({
      code: t.String({ description: "UPPER_SNAKE error code" }),
      message: t.String(),
      requestId: t.Union([t.String(), t.Null()]),
      details: t.Array(t.Object({ pointer: t.String(), message: t.String() })),
    }),
  },
  { title: "Error" },
);

export const data = <S extends TSchema>(schema: S) => t.Object({ data: schema });

export const list = <S extends TSchema>(schema: S) =>
  t.Object({
    data: t.Array(schema),
    page: t.Object({ nextCursor: t.Union([t.String(), t.Null()]), limit: t.Integer() }),
  });

const err = (description: string) => ({ ...ErrorEnvelope, description });

/** Error responses by status, for `response: { 200: …, ...errors(401, 403, 422) }`. */
export function errors(...statuses: (400 | 401 | 402 | 403 | 404 | 409 | 422 | 429 | 500 | 502)[]) {
  const text: Record<number, string> = {
    400: "Bad request",
    401: "API_KEY_INVALID, API_KEY_REVOKED, API_KEY_EXPIRED",
    402: "INSUFFICIENT_BALANCE",
    403: "API_SCOPE_MISSING, IP_NOT_ALLOWED, FEATURE_NOT_LICENSED, LICENSE_EXPIRED, LICENSE_NOT_FOUND, FORBIDDEN",
    404: "NOT_FOUND",
    409: "CONFLICT, IDEMPOTENCY_CONFLICT, MEDIA_IN_USE, ...",
    422: "VALIDATION_FAILED and the operation's rule codes",
    429: "RATE_LIMITED (Retry-After)",
    500: "INTERNAL",
    502: "PROVIDER_ERROR",
  };
  const out: Record<number, ReturnType<typeof err>> = {};
  for (const s of [401, 429, 500, ...statuses]) out[s] = err(text[s]!);
  return out;
}
