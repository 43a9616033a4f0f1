/**
 * The bytes of uploaded media on disk: `{data_dir}/media/{companyId}/{id}`. A file is streamed to a
 * hidden temp file beside its final name (hashing as it goes), fsynced, then renamed into place, so a
 * reader never sees half a file and a crash leaves at most a `.{id}.tmp` behind.
 */
import { mkdir, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";

export const mediaDir = (dataDir: string, companyId: string) => join(dataDir, "media", companyId);

export interface WrittenFile {
  path: string;
  size: number;
  sha256: string;
}

/** Streams `source` to `{dir}/{id}`; the returned size is what was written. Leaves nothing behind on error. */
export async function writeMediaFile({ source, dir, id }: { source: Blob; dir: string; id: string }): Promise<WrittenFile> {
  await mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${id}.tmp`);
  const path = join(dir, id);
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  const fh = await open(tmp, "wx", 0o640);
  try {
    try {
      for await (const chunk of source.stream()) {
        hasher.update(chunk);
        size += chunk.byteLength;
        let off = 0;
        while (off < chunk.byteLength) off += (await fh.write(chunk, off, chunk.byteLength - off)).bytesWritten;
      }
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  return { path, size, sha256: hasher.digest("hex") };
}

/** Deletes a media file; a missing file is fine (already gone). */
export async function removeMediaFile(path: string): Promise<void> {
  await rm(path, { force: true });
}
