/** Response schemas shared by every route, for validation-free documentation in the OpenAPI document. */
import { t, type TSchema } from "elysia";

export const ErrorEnvelope = t.Object(
  {
    error: t.Object({
      code: t.String({ description: "UPPER_SNAKE error code" }),
      message: t.String(),
      requestId: t.Union([t.String(), t.Null()]),
      details: t.Array(
        t.Object({
          pointer: t.String(),
          message: t.String(),
          existingContactId: t.Optional(t.String({ description: "CONFLICT on an identity: the contact it belongs to" })),
        }),
      ),
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

/**
 * Error responses by status, for `response: { 200: …, ...errors(403, 422) }` (401, 429 and 500 always).
 * The OpenAPI document lists each status's codes (openapi.document.ts; add rule codes with `detail["x-error-codes"]`).
 */
export function errors(...statuses: (400 | 401 | 402 | 403 | 404 | 409 | 422 | 429 | 500 | 502)[]) {
  const out: Record<number, typeof ErrorEnvelope> = {};
  for (const s of [401, 429, 500, ...statuses]) out[s] = ErrorEnvelope;
  return out;
}
