/**
 * The `q` name search answers alike on both engines: PostgreSQL's switchboard_name_tsvector / _tsquery
 * (migrations-pg/0005, scripts/pg-name-search.ts) split and fold names as SQLite's FTS5 index contact_search
 * (unicode61, remove_diacritics 2) does — checked against this SQLite's FTS5 itself.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freshPostgresDatabase, POSTGRES_SKIP_REASON, postgresAvailable } from "../../../test/helpers/postgres";
import type { Db } from "../client";
import { openPostgres } from "./engine";
import { migratePostgresAsync } from "./migrate";

/** FTS5's tokens of each text, in order. */
function fts5Tokens(texts: string[]): string[][] {
  const db = new Database(":memory:");
  db.exec(`CREATE VIRTUAL TABLE s USING fts5(x, tokenize='unicode61 remove_diacritics 2')`);
  db.exec(`CREATE VIRTUAL TABLE v USING fts5vocab(s, instance)`);
  const insert = db.prepare("INSERT INTO s (rowid, x) VALUES (?, ?)");
  texts.forEach((t, i) => insert.run(i + 1, t));
  const out: string[][] = texts.map(() => []);
  for (const r of db.query('SELECT doc, term FROM v ORDER BY doc, "offset"').all() as { doc: number; term: string }[]) out[r.doc - 1]!.push(r.term);
  db.close();
  return out;
}

/** PostgreSQL's index entries (lexemes in position order) for each text as a first name. */
async function pgTokens(db: Db, texts: string[]): Promise<string[][]> {
  const rows = (await db
    .sql(
      `SELECT t.i, l.lexeme, p.pos FROM json_array_elements_text(?::json) WITH ORDINALITY AS t(name, i),
         unnest(switchboard_name_tsvector(t.name, NULL)) AS l, unnest(l.positions) AS p(pos) ORDER BY t.i, p.pos`,
    )
    .all(JSON.stringify(texts))) as { i: number; lexeme: string }[];
  const out: string[][] = texts.map(() => []);
  for (const r of rows) out[r.i - 1]!.push(r.lexeme);
  return out;
}

describe.skipIf(!postgresAvailable())(
  `name search on PostgreSQL splits and folds as FTS5${postgresAvailable() ? "" : ` (skipped: ${POSTGRES_SKIP_REASON})`}`,
  () => {
    let db: ReturnType<typeof openPostgres>;
    beforeAll(async () => {
      const url = await freshPostgresDatabase("sb_names");
      await migratePostgresAsync(url, { version: "test" });
      db = openPostgres(url);
    });
    afterAll(() => db?.end());

    // Without ICU (a server built without it) the functions fold the case of ASCII-based letters only, by design
    // (docs/operations.md): the comparisons with FTS5 below need ICU.
    const icu = async () => (await db.sql("SELECT 1 AS y FROM pg_catalog.pg_collation WHERE collname = 'und-x-icu'").get()) !== null;

    test("names in many scripts give FTS5's words", async () => {
      if (!(await icu())) return console.warn("name-search.test: this PostgreSQL has no ICU; the comparison with FTS5 is not made");
      const names = [
        "José María Öztürk-Quist",
        "mary.jane O’Brien Smith/Jones J.R.R. Tolkien",
        "ΕΛΈΝΗ Γιώργος Παπαδοπούλου",
        "АНДРЕЙ Йорданов Ёлкин",
        "Łukasz Żółć Ægir Ødegård Straße",
        "Nguyễn Thị Minh Khai",
        "İlker Şahin François L'Écuyer",
        "张伟 김민준 さくら",
        "anna_maria+ops@example.com 3361 R2-D2",
        "Jose\u0301 (decomposed) — «quoted» · dot",
      ];
      expect(await pgTokens(db, names)).toEqual(fts5Tokens(names));
    });

    test("every character of the Latin, Greek, Cyrillic and punctuation blocks: a word where FTS5 has one, folded to the same letters", async () => {
      if (!(await icu())) return console.warn("name-search.test: this PostgreSQL has no ICU; the comparison with FTS5 is not made");
      const ranges: [number, number][] = [
        [0x20, 0x24f], // ASCII, Latin-1, Latin Extended-A/B
        [0x370, 0x3ff], // Greek
        [0x400, 0x52f], // Cyrillic
        [0x1e00, 0x1fff], // Latin Extended Additional, Greek Extended
        [0x2000, 0x206f], // General Punctuation
        [0x3000, 0x303f], // CJK punctuation
        [0xff00, 0xff65], // fullwidth forms
      ];
      const chars: string[] = [];
      for (const [a, b] of ranges) for (let cp = a; cp <= b; cp++) chars.push(String.fromCodePoint(cp));
      const fts = fts5Tokens(chars);
      const pg = await pgTokens(db, chars);
      // Known differences, all rare: PostgreSQL's NFC turns the few characters whose canonical form is another
      // character (Greek letters with oxia, U+0374) into it, where FTS5 keeps them apart; FTS5's Unicode tables
      // are older than ICU's (PostgreSQL folds the newer capitals Ϳ Ԩ Ԫ Ԭ Ԯ to their small letters); FTS5 keeps ǡ/Ǡ
      // apart from a.
      const known = new Set([...chars.filter((c) => c.normalize("NFC") !== c), ..."ǠǡͿԨԪԬԮ"].map((c) => c.codePointAt(0)!));
      const differ = chars.filter((c, i) => JSON.stringify(fts[i]) !== JSON.stringify(pg[i]) && !known.has(c.codePointAt(0)!));
      expect(
        differ.map(
          (c) =>
            `U+${c.codePointAt(0)!.toString(16).padStart(4, "0")} ${c}: fts5 ${JSON.stringify(fts[chars.indexOf(c)])} pg ${JSON.stringify(pg[chars.indexOf(c)])}`,
        ),
      ).toEqual([]);
    });

    test("a search folds its words as the index does, and the list query's condition uses the index", async () => {
      await db.sql(`INSERT INTO companies (id, slug, name, created_at) VALUES ('c1', 'acme', 'Acme', 1)`).run();
      const insert = db.sql(`INSERT INTO contacts (seq, id, company_id, first_name, last_name, created_at, updated_at) VALUES (NULL, ?, 'c1', ?, ?, 1, 1)`);
      await insert.run("k1", "José María", "Öztürk-Quist");
      await insert.run("k2", "Ελένη", "Γιώργος");
      await insert.run("k3", "mary.jane", null);
      for (let i = 0; i < 300; i++) await insert.run(`n${i}`, `Name${i}`, `Other${i}`);
      await db.sql("ANALYZE contacts").run();
      const search = async (words: string) =>
        (
          (await db
            .sql(`SELECT id FROM contacts s WHERE switchboard_name_tsvector(s.first_name, s.last_name) @@ switchboard_name_tsquery(?) ORDER BY id`)
            .all(words)) as { id: string }[]
        ).map((r) => r.id);
      expect(await search("JOSE ozturk")).toEqual(["k1"]);
      expect(await search("quis jos")).toEqual(["k1"]);
      expect(await search("ΕΛΈΝΗ γιωργ")).toEqual([]); // FTS5 keeps Greek accents: έ is not ε
      expect(await search("ελένη ΓΙΏΡΓΟΣ")).toEqual(["k2"]);
      expect(await search("jane")).toEqual(["k3"]);
      expect(await search("")).toEqual([]);
      const plan = (
        (await db
          .sql(`EXPLAIN SELECT id FROM contacts s WHERE switchboard_name_tsvector(s.first_name, s.last_name) @@ switchboard_name_tsquery(?)`)
          .values("jose")) as [string][]
      )
        .map((r) => r[0])
        .join("\n");
      expect(plan).toContain("contacts_name_search_idx");
    });
  },
);
