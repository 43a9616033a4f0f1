/** The rewrite of our portable SQL into PostgreSQL's (portable.ts). */
import { describe, expect, test } from "bun:test";
import { asTextBeforeJson, toPgConflictTarget, toPgParams } from "./portable";

describe("toPgParams", () => {
  test.each([
    ["SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = $1 AND b = $2"],
    ["UPDATE t SET a = ?1 WHERE id = ?2 AND b = ?1", "UPDATE t SET a = $1 WHERE id = $2 AND b = $1"],
    ["SELECT '?' AS q, \"we?ird\" FROM t WHERE a = ?", "SELECT '?' AS q, \"we?ird\" FROM t WHERE a = $1"],
    ["SELECT 1 -- why?\nFROM t WHERE a = ?", "SELECT 1 -- why?\nFROM t WHERE a = $1"],
    ["SELECT 'it''s ?' WHERE x = ?", "SELECT 'it''s ?' WHERE x = $1"],
  ])("%s", (input, expected) => {
    expect(toPgParams(input)).toBe(expected);
  });
});

test("an upsert's conflict target loses drizzle's table qualifiers", () => {
  expect(toPgConflictTarget(`insert into "s" ("a", "b") values ($1, $2) on conflict ("s"."a", "s"."b") do update set "b" = excluded."b"`)).toBe(
    `insert into "s" ("a", "b") values ($1, $2) on conflict ("a", "b") do update set "b" = excluded."b"`,
  );
});

test("a parameter cast to json or jsonb is typed as text first (Bun would encode it as a JSON string)", () => {
  expect(asTextBeforeJson("SELECT json_array_elements_text($1::json), $12::jsonb, col::json, $2::jsonpath")).toBe(
    "SELECT json_array_elements_text($1::text::json), $12::text::jsonb, col::json, $2::jsonpath",
  );
});
