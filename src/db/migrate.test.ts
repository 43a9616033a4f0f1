import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "./client";
import { migrate } from "./migrate";
import { embeddedMigrations } from "./migrations.gen";

const dir = mkdtempSync(join(tmpdir(), "sb-migrate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Applies only the first `n` embedded migrations, as an appliance of that version would have. */
function migrateTo(db: Db, n: number) {
  const { dialect, session } = db as unknown as { dialect: { migrate: Function }; session: unknown };
  dialect.migrate(embeddedMigrations.slice(0, n), session, { migrationsTable: "__drizzle_migrations" });
}

test("0.1.0 data survives the 0001 rebuild: contacts keep rowids as seq, identities stay unique, names become searchable", () => {
  const db = openDatabase(join(dir, "upgrade.db"));
  migrateTo(db, 1);
  const s = db.$client;
  s.exec(`INSERT INTO companies (id, name, slug, created_at) VALUES ('co', 'Co', 'co', 0)`);
  s.exec(`INSERT INTO tags (id, company_id, name, created_at) VALUES ('t1', 'co', 'vip', 0)`);
  for (const [i, first, last] of [[1, "Ann", "Smith"], [2, "José", "Núñez"]] as const) {
    s.query(`INSERT INTO contacts (id, company_id, first_name, last_name, created_at, updated_at) VALUES (?, 'co', ?, ?, 0, 0)`).run(`c${i}`, first, last);
    s.query(`INSERT INTO contact_identities (id, company_id, contact_id, channel, value, status, created_at) VALUES (?, 'co', ?, 'email', ?, 'verified', 0)`).run(`i${i}`, `c${i}`, `u${i}@x.test`);
    s.query(`INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, 't1', 0)`).run(`c${i}`);
  }
  const rowids = s.query(`SELECT rowid AS r, id FROM contacts ORDER BY id`).all();

  expect(migrate(db).applied).toBe(embeddedMigrations.length - 1);

  expect(s.query(`SELECT seq AS r, id FROM contacts ORDER BY id`).all()).toEqual(rowids);
  expect(s.query(`SELECT contact_id, value FROM contact_identities ORDER BY value`).all()).toEqual([
    { contact_id: "c1", value: "u1@x.test" },
    { contact_id: "c2", value: "u2@x.test" },
  ]);
  expect(s.query(`SELECT count(*) AS n FROM contact_tags`).get()).toEqual({ n: 2 });
  expect(() => s.exec(`INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES ('co', 'c2', 'email', 'u1@x.test', 'verified', 0)`)).toThrow(/UNIQUE/);
  const search = (q: string) => s.query(`SELECT c.id FROM contact_search JOIN contacts c ON c.seq = contact_search.rowid WHERE contact_search MATCH ?`).all(q);
  expect(search('"nunez"*')).toEqual([{ id: "c2" }]);
  expect(search('"smi"*')).toEqual([{ id: "c1" }]);
  // Foreign keys are back on and still hold.
  expect(s.query(`PRAGMA foreign_keys`).get()).toEqual({ foreign_keys: 1 });
  expect(() => s.exec(`INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES ('nope', 't1', 0)`)).toThrow(/FOREIGN KEY/);
  db.close();
});
