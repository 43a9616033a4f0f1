import { defineConfig } from "drizzle-kit";

/**
 * The PostgreSQL migration history (DESIGN §15). Its schema is generated from the SQLite `*.table.ts` files by
 * scripts/pg-schema.ts (`make migrations` runs both), so the two histories describe one schema.
 */
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/postgres/schema.gen.ts",
  out: "./migrations-pg",
});
