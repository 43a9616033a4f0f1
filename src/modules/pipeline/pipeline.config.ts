/**
 * The pipeline's shape (DESIGN §12): a built-in template or custom `[[pipeline.stages]]`, resolved once at
 * start-up. Stages live in the config, not the database: a stage's id is derived from its key, so ids stay
 * the same across restarts, config edits and appliances, and records keep pointing at them.
 * `resolvePipeline` throws a ConfigError naming the key for anything TypeBox cannot say (duplicate keys, a
 * first stage that is not open, a custom pipeline without stages, unknown terms).
 */
import { createHash } from "node:crypto";
import { ConfigError } from "../../config/config.load";
import type { Config } from "../../config/config.schema";

export type StageKind = "open" | "won" | "lost";
export type TemplateName = Config["pipeline"]["template"];

export interface Terms {
  record: string;
  records: string;
  stage: string;
  stages: string;
}

export interface Stage {
  id: string;
  key: string;
  name: string;
  order: number;
  kind: StageKind;
  probability: number;
}

export interface Pipeline {
  template: TemplateName;
  terms: Terms;
  stages: Stage[];
  /** The stage a new record starts in: the first one (always open). */
  firstStage: Stage;
  stageById(id: string): Stage | undefined;
}

type StageSpec = { key: string; name: string; kind?: StageKind; probability?: number };

/** Built-in templates, modelled on Pipedrive's and HubSpot's defaults and the common ATS / admissions funnels. */
export const PIPELINE_TEMPLATES: Record<Exclude<TemplateName, "custom">, { terms: Terms; stages: StageSpec[] }> = {
  sales: {
    terms: { record: "Deal", records: "Deals", stage: "Stage", stages: "Stages" },
    stages: [
      { key: "lead", name: "Lead", probability: 10 },
      { key: "qualified", name: "Qualified", probability: 25 },
      { key: "proposal", name: "Proposal", probability: 50 },
      { key: "negotiation", name: "Negotiation", probability: 75 },
      { key: "won", name: "Won", kind: "won" },
      { key: "lost", name: "Lost", kind: "lost" },
    ],
  },
  recruiting: {
    terms: { record: "Candidate", records: "Candidates", stage: "Stage", stages: "Stages" },
    stages: [
      { key: "applied", name: "Applied", probability: 5 },
      { key: "screening", name: "Screening", probability: 15 },
      { key: "interview", name: "Interview", probability: 40 },
      { key: "offer", name: "Offer", probability: 80 },
      { key: "hired", name: "Hired", kind: "won" },
      { key: "rejected", name: "Rejected", kind: "lost" },
    ],
  },
  admissions: {
    terms: { record: "Application", records: "Applications", stage: "Stage", stages: "Stages" },
    stages: [
      { key: "inquiry", name: "Inquiry", probability: 10 },
      { key: "submitted", name: "Submitted", probability: 30 },
      { key: "under_review", name: "Under review", probability: 50 },
      { key: "interview", name: "Interview", probability: 70 },
      { key: "admitted", name: "Admitted", kind: "won" },
      { key: "declined", name: "Declined", kind: "lost" },
    ],
  },
};

const CUSTOM_TERMS: Terms = { record: "Record", records: "Records", stage: "Stage", stages: "Stages" };
const TERM_KEYS = ["record", "records", "stage", "stages"] as const;

/** A stable UUID (version 8, RFC 9562 custom) derived from the stage key. */
export function stageIdOf(key: string): string {
  const h = createHash("sha256").update(`switchboard.pipeline.stage:${key}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x80;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString("hex");
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`;
}

export function resolvePipeline(config: Config["pipeline"], source = "config"): Pipeline {
  const fail = (key: string, problem: string) => new ConfigError(`${source}: key "${key}" ${problem}`);
  let specs: StageSpec[];
  let terms: Terms;
  if (config.template === "custom") {
    if (config.stages.length === 0) throw fail("pipeline.stages", 'is empty: template = "custom" needs at least one [[pipeline.stages]]');
    specs = config.stages;
    terms = { ...CUSTOM_TERMS };
  } else {
    if (config.stages.length > 0) throw fail("pipeline.stages", `is set but template is "${config.template}": set template = "custom" to use your own stages`);
    specs = PIPELINE_TEMPLATES[config.template].stages;
    terms = { ...PIPELINE_TEMPLATES[config.template].terms };
  }
  for (const [k, v] of Object.entries(config.terms)) {
    if (!(TERM_KEYS as readonly string[]).includes(k)) throw fail(`pipeline.terms.${k}`, `is not a term: expected one of ${TERM_KEYS.join(", ")}`);
    terms[k as keyof Terms] = v;
  }
  const seen = new Set<string>();
  specs.forEach((s, i) => {
    if (seen.has(s.key)) throw fail(`pipeline.stages[${i}].key`, `has value "${s.key}": stage keys must be unique`);
    seen.add(s.key);
  });
  if ((specs[0]!.kind ?? "open") !== "open")
    throw fail("pipeline.stages[0].kind", `has value "${specs[0]!.kind}": the first stage (where new records start) must be open`);
  const open = specs.filter((s) => (s.kind ?? "open") === "open");
  const stages: Stage[] = specs.map((s, i) => {
    const kind = s.kind ?? "open";
    const defaultProbability = kind === "won" ? 100 : kind === "lost" ? 0 : Math.round((100 * (open.indexOf(s) + 1)) / (open.length + 1));
    return { id: stageIdOf(s.key), key: s.key, name: s.name, order: i + 1, kind, probability: s.probability ?? defaultProbability };
  });
  const byId = new Map(stages.map((s) => [s.id, s]));
  return { template: config.template, terms, stages, firstStage: stages[0]!, stageById: (id) => byId.get(id) };
}
