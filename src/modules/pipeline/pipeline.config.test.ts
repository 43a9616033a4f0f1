/** [pipeline] config: templates, custom stages, and start-up errors that name the key. Plus countWonRecords. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../db/client";
import { silentLogger } from "../../platform/logger";
import { signLicense } from "../../../scripts/sign-license";
import { ConfigError, parseConfig } from "../../config/config.load";
import { buildDeps } from "../../deps";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { PIPELINE_TEMPLATES, resolvePipeline, stageIdOf } from "./pipeline.config";
import { countWonRecords } from "./pipeline.service";

const resolve = (pipeline: unknown) => resolvePipeline(parseConfig({ pipeline }, { env: {} }).pipeline);

describe("templates", () => {
  test.each([
    ["sales", "Deal", "Deals", ["lead", "qualified", "proposal", "negotiation", "won", "lost"]],
    ["recruiting", "Candidate", "Candidates", ["applied", "screening", "interview", "offer", "hired", "rejected"]],
    ["admissions", "Application", "Applications", ["inquiry", "submitted", "under_review", "interview", "admitted", "declined"]],
  ])("%s: terms and stages, each template with one won and one lost stage", (template, record, records, keys) => {
    const p = resolve({ template });
    expect(p.template).toBe(template as "sales");
    expect(p.terms).toMatchObject({ record, records });
    expect(p.stages.map((s) => s.key)).toEqual(keys);
    expect(p.stages.map((s) => s.order)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(p.stages.filter((s) => s.kind === "won").map((s) => s.probability)).toEqual([100]);
    expect(p.stages.filter((s) => s.kind === "lost").map((s) => s.probability)).toEqual([0]);
    expect(p.firstStage.kind).toBe("open");
  });

  test("the default is sales; stage ids are derived from keys (stable UUIDs)", () => {
    const p = resolve(undefined);
    expect(p.template).toBe("sales");
    expect(p.stages[0]!.id).toBe(stageIdOf("lead"));
    expect(stageIdOf("lead")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(stageIdOf("lead")).not.toBe(stageIdOf("won"));
    expect(Object.keys(PIPELINE_TEMPLATES)).toEqual(["sales", "recruiting", "admissions"]);
  });

  test("terms can be renamed per installation", () => {
    expect(resolve({ template: "sales", terms: { record: "Opportunity", records: "Opportunities" } }).terms).toEqual({
      record: "Opportunity",
      records: "Opportunities",
      stage: "Stage",
      stages: "Stages",
    });
  });
});

describe("custom stages", () => {
  test("kind defaults to open; open probabilities spread evenly unless given; won 100, lost 0", () => {
    const p = resolve({
      template: "custom",
      terms: { record: "Ticket", records: "Tickets" },
      stages: [
        { key: "new", name: "New" },
        { key: "working", name: "Working", probability: 70 },
        { key: "waiting", name: "Waiting" },
        { key: "solved", name: "Solved", kind: "won" },
        { key: "dropped", name: "Dropped", kind: "lost" },
      ],
    });
    expect(p.template).toBe("custom");
    expect(p.terms).toEqual({ record: "Ticket", records: "Tickets", stage: "Stage", stages: "Stages" });
    expect(p.stages.map((s) => [s.key, s.kind, s.probability])).toEqual([
      ["new", "open", 25],
      ["working", "open", 70],
      ["waiting", "open", 75],
      ["solved", "won", 100],
      ["dropped", "lost", 0],
    ]);
  });
});

describe("start-up validation names the key", () => {
  test.each([
    [{ template: "pipes" }, 'key "pipeline.template" has value "pipes": expected one of "sales", "recruiting", "admissions", "custom"'],
    [{ template: "custom" }, 'key "pipeline.stages" is empty'],
    [{ template: "sales", stages: [{ key: "a", name: "A" }] }, 'key "pipeline.stages" is set but template is "sales"'],
    [
      {
        template: "custom",
        stages: [
          { key: "a", name: "A" },
          { key: "a", name: "B" },
        ],
      },
      'key "pipeline.stages[1].key" has value "a": stage keys must be unique',
    ],
    [
      {
        template: "custom",
        stages: [
          { key: "w", name: "W", kind: "won" },
          { key: "a", name: "A" },
        ],
      },
      'key "pipeline.stages[0].kind" has value "won": the first stage',
    ],
    [{ template: "custom", stages: [{ key: "Bad Key", name: "A" }] }, 'key "pipeline.stages[0].key" has value "Bad Key"'],
    [
      { template: "custom", stages: [{ key: "a", name: "A", kind: "maybe" }] },
      'key "pipeline.stages[0].kind" has value "maybe": expected one of "open", "won", "lost"',
    ],
    [{ template: "custom", stages: [{ key: "a", name: "A", probability: 101 }] }, 'key "pipeline.stages[0].probability" has value 101'],
    [{ template: "custom", stages: [{ key: "a", name: "A", color: "red" }] }, 'key "pipeline.stages[0].color"'],
    [{ terms: { deal: "Deal" } }, 'key "pipeline.terms.deal" is not a term'],
  ])("%p → ConfigError", (pipeline, message) => {
    expect(() => resolve(pipeline)).toThrow(ConfigError);
    expect(() => resolve(pipeline)).toThrow(message);
  });

  test("buildDeps refuses a bad [pipeline] before anything starts", () => {
    const dir = mkdtempSync(join(tmpdir(), "sb-pipeline-"));
    const config = parseConfig({ storage: { data_dir: dir }, pipeline: { template: "custom" } }, { env: {} });
    const db = openDatabase(join(dir, "switchboard.db"));
    try {
      expect(() => buildDeps({ config, db, log: silentLogger })).toThrow('key "pipeline.stages" is empty');
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("countWonRecords (for source tracking's recordsWon)", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp();
    const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");
    writeFileSync(
      app.config.license.file,
      signLicense({ company: "default", modules: ["pipeline"], expiresAt: "2099-01-01T00:00:00.000Z", privateKey: devKey }),
    );
  });
  afterAll(() => app.close());

  test("counts won records of the given contacts only, across IN-list chunks", async () => {
    const contacts: string[] = [];
    for (const phone of ["+14155550301", "+14155550302", "+14155550303"]) {
      contacts.push((await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: phone }] } })).body.data.contact.id);
    }
    const mk = async (contactId: string, stage: string) => {
      const r = (await app.request("POST", "/records", { body: { title: "d", contactId } })).body.data;
      if (stage !== "lead") await app.request("POST", `/records/${r.id}/move`, { body: { stageId: stageIdOf(stage) } });
    };
    await mk(contacts[0]!, "won");
    await mk(contacts[0]!, "won");
    await mk(contacts[0]!, "lost");
    await mk(contacts[1]!, "won");
    await mk(contacts[1]!, "lead");
    await mk(contacts[2]!, "won");
    const companyId = app.company.id;
    expect(await countWonRecords({ db: app.deps.db, companyId, contactIds: [contacts[0]!, contacts[1]!] })).toBe(3);
    expect(await countWonRecords({ db: app.deps.db, companyId, contactIds: [] })).toBe(0);
    expect(await countWonRecords({ db: app.deps.db, companyId: "another-company", contactIds: contacts })).toBe(0);
    // 1,200 ids (three chunks) with the real ones at the far end of the list.
    const many = [...Array.from({ length: 1197 }, (_, i) => `00000000-0000-7000-8000-${String(i).padStart(12, "0")}`), ...contacts];
    expect(await countWonRecords({ db: app.deps.db, companyId, contactIds: many })).toBe(4);
  });
});
