/**
 * Segment request and response schemas (validation and OpenAPI). The filter tree is validated by
 * `checkFilter` (contacts/audience-filter.ts), which names the offending node with a JSON pointer
 * (`/filter/all/2/value`) — a TypeBox union of recursive shapes would answer "does not match any of" at the
 * top. The OpenAPI document still publishes the tree as named, recursive schemas (`SegmentFilter` …).
 */
import { t } from "elysia";
import { CHANNELS } from "../../channels/channel.types";
import { FILTER_LIMITS, FILTER_OPS } from "../contacts/audience-filter";
import { named } from "../../platform/http/schemas";

const ref = { $ref: "#/components/schemas/SegmentFilter" };

/** The filter tree as the OpenAPI document shows it (components/schemas/SegmentFilter and its branches). */
const FILTER_DOC = {
  title: "SegmentFilter",
  description: `A contact filter: a group ({all}, {any}, {not}) or a condition. At most ${FILTER_LIMITS.maxNodes} nodes, groups nested at most ${FILTER_LIMITS.maxDepth} deep, ${FILTER_LIMITS.maxValues} values per in/nin; 422 with a pointer to the offending node.`,
  anyOf: [
    {
      title: "SegmentFilterAll",
      type: "object",
      description: "Every filter holds.",
      required: ["all"],
      properties: { all: { type: "array", items: ref, minItems: 1 } },
      additionalProperties: false,
    },
    {
      title: "SegmentFilterAny",
      type: "object",
      description: "At least one filter holds.",
      required: ["any"],
      properties: { any: { type: "array", items: ref, minItems: 1 } },
      additionalProperties: false,
    },
    {
      title: "SegmentFilterNot",
      type: "object",
      description: "The filter does not hold.",
      required: ["not"],
      properties: { not: ref },
      additionalProperties: false,
    },
    {
      title: "SegmentCondition",
      type: "object",
      description: [
        "One fact of a contact. Fields, their ops and values:",
        "- `tag` (tag names): eq ne in nin exists",
        "- `customFields.<key>`: text/select eq ne in nin contains exists; number eq ne in nin gt gte lt lte exists; boolean eq ne exists; date (YYYY-MM-DD) eq ne in nin gt gte lt lte exists",
        "- `consent.<channel>` (opted_in, opted_out, unknown): eq ne in nin",
        "- `identity.<channel>`: exists",
        "- `createdAt`, `lastInboundAt`, `lastInboundAt.<channel>` (RFC 3339 date-time, or a duration before now: -P30D, -PT12H, -PT90M): gt gte lt lte; lastInboundAt also exists",
        "- `source` (source ids): eq ne in nin exists",
        "- `city`, `country`: eq ne in nin contains exists (case-sensitive)",
        "- `blocked` (true/false): eq ne",
        "`ne` is `not eq` and `nin` is `not in` (a contact without the fact matches them); `exists` takes value true (default) or false.",
        `Channels: ${CHANNELS.join(", ")}.`,
      ].join("\n"),
      required: ["field", "op"],
      properties: {
        field: { type: "string", examples: ["consent.whatsapp", "city", "lastInboundAt", "customFields.plan"] },
        op: { type: "string", enum: [...FILTER_OPS] },
        value: {
          description: "string, number, boolean or an array of them (in, nin), as the field takes; absent for exists",
          anyOf: [{ type: "string" }, { type: "number" }, { type: "boolean" }, { type: "array", items: { anyOf: [{ type: "string" }, { type: "number" }] } }],
        },
      },
      additionalProperties: false,
    },
  ],
};

/** A filter in a request or response: any JSON here, checked by `checkFilter`; documented as SegmentFilter. */
export const FilterModel = t.Unknown({ "x-openapi-schema": FILTER_DOC });

export const SegmentModel = named(
  "Segment",
  t.Object({
    id: t.String({ format: "uuid" }),
    name: t.String(),
    filter: FilterModel,
    createdAt: t.String({ format: "date-time" }),
    updatedAt: t.String({ format: "date-time" }),
  }),
);

const Name = t.String({ minLength: 1, maxLength: 200, description: "unique in the company" });

export const SegmentCreateBody = named("SegmentCreateRequest", t.Object({ name: Name, filter: FilterModel }, { additionalProperties: false }));
export const SegmentPatchBody = named(
  "SegmentPatchRequest",
  t.Object({ name: t.Optional(Name), filter: t.Optional(FilterModel) }, { additionalProperties: false, minProperties: 1 }),
);
export const SegmentCountBody = named("SegmentCountRequest", t.Object({ filter: FilterModel }, { additionalProperties: false }));
export const SegmentCount = named("SegmentCount", t.Object({ count: t.Integer({ minimum: 0, description: "contacts meeting the filter now" }) }));
