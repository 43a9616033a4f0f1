/**
 * migrate-to-postgres: one SQLite value as an element of a PostgreSQL array literal in text form, by the target
 * column's type; a value the column cannot take is refused, naming the table, row and column.
 */
import { UsageError } from "./cli.util";

/** One value as an element of a PostgreSQL array literal in text form; `where` names it in errors. */
type Encode = (v: unknown, where: () => string) => string;

const INTEGER = /^-?\d+$/;
const quoted = (s: string) => `"${s.replace(/["\\]/g, "\\$&")}"`;
function describe(v: unknown): string {
  if (v instanceof Uint8Array) return `a ${v.byteLength}-byte blob`;
  const text = typeof v === "string" ? JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v) : String(v);
  return `${typeof v === "string" ? "text" : typeof v} ${text}`;
}
function refuse(v: unknown, where: () => string, expected: string): never {
  throw new UsageError(
    `${where()} holds ${describe(v)}, which PostgreSQL's ${expected} column cannot store; fix the row on SQLite and run again (nothing was copied)`,
  );
}
const text: Encode = (v, where) => {
  if (typeof v === "string") {
    if (v.includes("\0"))
      throw new UsageError(
        `${where()} holds text with a NUL character, which PostgreSQL's text cannot store; fix the row on SQLite and run again (nothing was copied)`,
      );
    return quoted(v);
  }
  if (typeof v === "number" || typeof v === "bigint") return quoted(String(v));
  return refuse(v, where, "text");
};

/**
 * SQLite value → PostgreSQL column type. The appliance stores every value alike on both engines (integers,
 * 0/1 booleans and millisecond timestamps as bigint, JSON as text: scripts/pg-schema.ts), so the copy is
 * value for value; what SQLite's loose typing lets through and PostgreSQL cannot hold is refused by name.
 */
export function encoderFor(type: string, where: () => string): Encode {
  const base = type.replace(/\(.*\)$/, "");
  switch (base) {
    case "bigint":
    case "integer":
    case "smallint":
      return (v, at) =>
        typeof v === "bigint" || (typeof v === "number" && Number.isInteger(v))
          ? String(v)
          : typeof v === "string" && INTEGER.test(v)
            ? v
            : refuse(v, at, type);
    case "double precision":
    case "real":
    case "numeric":
      return (v, at) =>
        typeof v === "number"
          ? Number.isNaN(v)
            ? "NaN"
            : v === Infinity
              ? "Infinity"
              : v === -Infinity
                ? "-Infinity"
                : String(v)
          : typeof v === "bigint"
            ? String(v)
            : refuse(v, at, type);
    case "boolean":
      return (v, at) => (v === 0n || v === 0 ? "f" : v === 1n || v === 1 ? "t" : refuse(v, at, type));
    case "bytea":
      return (v, at) =>
        v instanceof Uint8Array
          ? quoted(`\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}`)
          : typeof v === "string"
            ? quoted(`\\x${Buffer.from(v).toString("hex")}`)
            : refuse(v, at, type);
    case "text":
    case "character varying":
    case "json":
    case "jsonb":
      return text;
    default:
      throw new UsageError(
        `${where()}: no conversion from SQLite to the PostgreSQL type ${type}; teach migrate-to-postgres (src/cli/migrate-to-postgres.ts) to copy it`,
      );
  }
}
