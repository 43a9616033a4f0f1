/**
 * Named schemas: `named("Message", t.Object(…))` gives a schema the title under which the OpenAPI document
 * publishes it (`components/schemas/Message`, referenced by `$ref`; see openapi.document.ts). Validation is unchanged.
 */
import { t, type TSchema } from "elysia";

export function named<S extends TSchema>(name: string, schema: S): S {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new Error(`schema name must be PascalCase: ${name}`);
  return { ...schema, title: name } as S;
}

/** An amount of the company's billing currency (shared by every module that shows prices or values). */
export const Money = named(
  "Money",
  t.Object({
    amount: t.String({ description: "decimal text, 6 places", examples: ["0.050000"] }),
    unit: t.String({ description: "the billing currency code", examples: ["USD"] }),
  }),
);
