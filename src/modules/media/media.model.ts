import { t } from "elysia";
import { API_PREFIX } from "../../platform/http/api-guard.plugin";
import type { MediaRow } from "./media.service";
import { named } from "../../platform/http/schemas";

export const MediaModel = named(
  "Media",
  t.Object({
    id: t.String(),
    filename: t.String(),
    mimeType: t.String(),
    size: t.Integer({ description: "bytes" }),
    sha256: t.String({ description: "hex SHA-256 of the content" }),
    url: t.String({ description: "GET it (with your API key) for the bytes" }),
    createdAt: t.String({ format: "date-time" }),
  }),
);

export function toMediaView(row: MediaRow, publicUrl: string) {
  return {
    id: row.id,
    filename: row.filename,
    mimeType: row.mimeType,
    size: row.size,
    sha256: row.sha256,
    url: `${publicUrl.replace(/\/+$/, "")}${API_PREFIX}/media/${row.id}/content`,
    createdAt: row.createdAt.toISOString(),
  };
}
