/** /media end to end through the real app: upload, read back, checks, quota, delete, isolation. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ACCOUNTS, BASE, createTestApp, TEST_ENGINE, type TestApp } from "../../../test/helpers/test-app";
import { inbound } from "../../../test/helpers/messaging";
import { createApiKey } from "../api-keys/api-keys.service";
import { createCompany } from "../companies/companies.service";
import { newId } from "../../platform/ids";
import { DISPATCH_JOB } from "../messages/messages.jobs";
import { mediaStore } from "./media.repository";
import { holdAt } from "../../../test/helpers/gate";

// Minimal but sniffable contents.
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 4]);
const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 0xff, 0xd9]);
const PDF = new TextEncoder().encode("%PDF-1.4\n1 0 obj << >> endobj\n%%EOF\n");

let app: TestApp;

async function upload(
  parts: { bytes?: Uint8Array | string; type?: string; name?: string; channel?: string; omitFile?: boolean },
  { key = app.key, headers = {} }: { key?: string; headers?: Record<string, string> } = {},
) {
  const form = new FormData();
  if (!parts.omitFile) form.append("file", new File([parts.bytes ?? PNG], parts.name ?? "pic.png", { type: parts.type ?? "image/png" }));
  if (parts.channel !== undefined) form.append("channel", parts.channel);
  const res = await app.app.handle(new Request(`${BASE}/media`, { method: "POST", headers: { authorization: `Bearer ${key}`, ...headers }, body: form }));
  return { status: res.status, body: (await res.json()) as any, headers: res.headers };
}

const companyFiles = (companyId = app.company.id) => {
  const dir = join(app.dir, "media", companyId);
  return existsSync(dir) ? readdirSync(dir) : [];
};

/** Stand-in for deps.channels until the channel runtime is wired (and a fixed view for these tests). */
function useFakeChannels(): () => void {
  const deps = app.deps as unknown as { channels?: Record<string, unknown> };
  const real = deps.channels;
  deps.channels = {
    ...real,
    all: () => [
      {
        account: { id: "wa-main", company: "default", channel: "whatsapp", provider: "whatsapp-cloud", name: "WA Main", isDefault: true, settings: {} },
        adapter: { capabilities: { media: { "image/jpeg": 5 << 20, "image/png": 16, "application/pdf": 100 << 20 } } },
        status: "active",
      },
      {
        account: { id: "tg-other", company: "other", channel: "telegram", provider: "telegram", name: "TG", isDefault: true, settings: {} },
        adapter: { capabilities: { media: { "image/png": 10 << 20 } } },
        status: "active",
      },
    ],
  };
  return () => {
    deps.channels = real;
  };
}

beforeAll(async () => {
  // NB! `[storage]` given here replaces the harness's whole table, so the temp data dir is ours to make.
  const dir = mkdtempSync(join(tmpdir(), "sb-media-"));
  app = await createTestApp({ dataDir: dir, config: { storage: { data_dir: dir, media_quota_mb: 1 } } });
});
afterAll(() => app.close());

describe("upload and read back", () => {
  test("upload → metadata → content bytes identical; listed newest first", async () => {
    const up = await upload({ bytes: PDF, type: "application/pdf", name: "C:\\fakepath\\invoice 1.pdf" });
    expect(up.status).toBe(201);
    const m = up.body.data;
    expect(m).toMatchObject({ filename: "invoice 1.pdf", mimeType: "application/pdf", size: PDF.length });
    expect(m.sha256).toBe(new Bun.CryptoHasher("sha256").update(PDF).digest("hex"));
    expect(m.url).toEndWith(`/api/public/v1/media/${m.id}/content`);
    expect(existsSync(join(app.dir, "media", app.company.id, m.id))).toBe(true);
    expect(companyFiles().filter((f) => f.endsWith(".tmp"))).toEqual([]);

    const get = await app.request("GET", `/media/${m.id}`);
    expect(get.status).toBe(200);
    expect(get.body.data).toEqual(m);

    const content = await app.app.handle(new Request(`${BASE}/media/${m.id}/content`, { headers: { authorization: `Bearer ${app.key}` } }));
    expect(content.status).toBe(200);
    expect(content.headers.get("content-type")).toBe("application/pdf");
    expect(content.headers.get("x-content-type-options")).toBe("nosniff");
    expect(new Uint8Array(await content.arrayBuffer())).toEqual(PDF);

    const second = await upload({ bytes: JPEG, type: "image/jpg", name: "a.jpg" });
    expect(second.status).toBe(201);
    expect(second.body.data.mimeType).toBe("image/jpeg");
    const page1 = await app.request("GET", "/media?limit=1");
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((x: any) => x.id)).toEqual([second.body.data.id]);
    const page2 = await app.request("GET", `/media?limit=1&cursor=${page1.body.page.nextCursor}`);
    expect(page2.body.data.map((x: any) => x.id)).toEqual([m.id]);
  });

  test("no declared type: the sniffed one is stored", async () => {
    const up = await upload({ bytes: JPEG, type: "application/octet-stream", name: "blob" });
    expect(up.status).toBe(201);
    expect(up.body.data.mimeType).toBe("image/jpeg");
  });

  test("an unsniffable declared type is kept", async () => {
    const up = await upload({ bytes: "hello,world\n", type: "text/csv", name: "a.csv" });
    expect(up.status).toBe(201);
    expect(up.body.data.mimeType).toBe("text/csv");
  });

  test("missing file field → 422 /file; empty file → 422 /file", async () => {
    const none = await upload({ omitFile: true, channel: "whatsapp" });
    expect(none.status).toBe(422);
    expect(none.body.error.details.map((d: any) => d.pointer)).toContain("/file");
    const empty = await upload({ bytes: new Uint8Array(0), type: "text/plain" });
    expect(empty.status).toBe(422);
    expect(empty.body.error.details).toEqual([{ pointer: "/file", message: "is empty" }]);
  });

  test("a body over the 100 MB cap is refused from Content-Length, before it is read", async () => {
    const form = new FormData();
    form.append("file", new File([PNG], "a.png", { type: "image/png" }));
    const req = new Request(`${BASE}/media`, {
      method: "POST",
      headers: { authorization: `Bearer ${app.key}`, "content-length": String(200 << 20) },
      body: form,
    });
    const res = await app.app.handle(req);
    expect(res.status).toBe(422);
    expect(((await res.json()) as any).error.details).toEqual([{ pointer: "/file", message: "is over the 100 MB limit for one file" }]);
    const noKey = await app.app.handle(new Request(`${BASE}/media`, { method: "POST", headers: { "content-length": String(200 << 20) }, body: form }));
    expect(noKey.status).toBe(401);
  });

  describe("a chunked upload (no Content-Length) is capped while it streams (issue 34 row 4)", () => {
    /** A multipart body of `size` file bytes sent chunked over a real socket; `pulled` counts what the client produced. */
    async function chunkedUpload(size: number) {
      // The body size limit `serve` sets (src/cli/serve.ts): Bun's own 128 MB default would hide the app's cap.
      const server = app.app.listen({ hostname: "127.0.0.1", port: 0, maxRequestBodySize: 4 * 1024 ** 3 }).server!;
      const head = new TextEncoder().encode(
        '--BOUNDARY\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\nContent-Type: application/octet-stream\r\n\r\n',
      );
      const tail = new TextEncoder().encode("\r\n--BOUNDARY--\r\n");
      const chunk = new Uint8Array(256 * 1024).fill(0x41);
      let pulled = 0;
      let phase = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (phase === 0) return ((phase = 1), c.enqueue(head));
          if (pulled < size) return ((pulled += chunk.byteLength), c.enqueue(chunk));
          if (phase === 1) return ((phase = 2), c.enqueue(tail));
          c.close();
        },
      });
      try {
        const res = await fetch(`http://127.0.0.1:${server.port}/api/public/v1/media`, {
          method: "POST",
          headers: { authorization: `Bearer ${app.key}`, "content-type": "multipart/form-data; boundary=BOUNDARY" },
          body,
          duplex: "half",
        } as RequestInit);
        return { status: res.status, body: (await res.json()) as any, pulled: () => pulled };
      } finally {
        await app.app.stop(true);
      }
    }

    test("400 MB chunked: refused once past 100 MB, memory bounded by the cap", async () => {
      Bun.gc(true);
      const before = process.memoryUsage().rss;
      const started = performance.now();
      const r = await chunkedUpload(400 << 20);
      const grew = process.memoryUsage().rss - before;
      console.log(
        `chunked POST /media 400 MB: ${r.status} after ${(r.pulled() / (1 << 20)).toFixed(0)} MB sent, ${(performance.now() - started).toFixed(0)} ms, RSS +${(grew / (1 << 20)).toFixed(0)} MB`,
      );
      expect(r.status).toBe(422);
      expect(r.body.error.details).toEqual([{ pointer: "/file", message: "is over the 100 MB limit for one file" }]);
      expect(grew).toBeLessThan(200 << 20); // before: the whole 400 MB was read first (+397 MB)
    }, 60_000);

    test("a small chunked upload is stored", async () => {
      const r = await chunkedUpload(256 * 1024);
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ size: 256 * 1024, filename: "big.bin" });
      expect((await app.request("DELETE", `/media/${r.body.data.id}`)).status).toBe(200); // the quota tests below need the room
    }, 30_000);
  });

  test("scopes: media:read cannot upload; media:write needed", async () => {
    const { key } = await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: app.company.id, name: "ro", scopes: ["media:read"] });
    const res = await upload({}, { key });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("API_SCOPE_MISSING");
    expect((await app.request("GET", "/media", { key })).status).toBe(200);
  });
});

describe("type and size checks", () => {
  test("declared type contradicted by the content → 422 /file, nothing stored", async () => {
    const before = companyFiles().length;
    const res = await upload({ bytes: PDF, type: "image/png", name: "x.png" });
    expect(res.status).toBe(422);
    expect(res.body.error.details).toEqual([{ pointer: "/file", message: "declared as image/png but the content is application/pdf" }]);
    const res2 = await upload({ bytes: "just text", type: "image/jpeg", name: "x.jpg" });
    expect(res2.status).toBe(422);
    expect(res2.body.error.details[0].pointer).toBe("/file");
    expect(companyFiles().length).toBe(before);
  });

  test("per channel with the configured sandbox accounts (deps.channels)", async () => {
    const gif = await upload({ bytes: new TextEncoder().encode("GIF89a......"), type: "image/gif", name: "a.gif", channel: "whatsapp" });
    expect(gif.status).toBe(422);
    expect(gif.body.error.details.map((d: any) => d.pointer)).toEqual(["/file"]);
    const byName = await upload({ bytes: PNG, channel: "whatsapp" });
    expect(byName.status).toBe(201);
    const byId = await upload({ bytes: JPEG, type: "image/jpeg", name: "b.jpg", channel: ACCOUNTS.whatsapp });
    expect(byId.status).toBe(201);
    const nope = await upload({ bytes: PNG, channel: "fax" });
    expect(nope.status).toBe(422);
    expect(nope.body.error.details.map((d: any) => d.pointer)).toEqual(["/channel"]);
  });

  test("per channel: refused type and oversized file → /file; unknown channel → /channel", async () => {
    const restore = useFakeChannels();
    try {
      const gif = await upload({ bytes: new TextEncoder().encode("GIF89a......"), type: "image/gif", name: "a.gif", channel: "whatsapp" });
      expect(gif.status).toBe(422);
      expect(gif.body.error.details).toHaveLength(1);
      expect(gif.body.error.details[0].pointer).toBe("/file");
      expect(gif.body.error.details[0].message).toStartWith("image/gif is not accepted on whatsapp (WA Main)");

      const big = await upload({ bytes: PNG, type: "image/png", channel: "wa-main" }); // 20 bytes > 16
      expect(big.status).toBe(422);
      expect(big.body.error.details[0]).toMatchObject({ pointer: "/file" });
      expect(big.body.error.details[0].message).toContain("limit for image/png on whatsapp (WA Main)");

      const other = await upload({ bytes: PNG, channel: "telegram" }); // another company's account
      expect(other.status).toBe(422);
      expect(other.body.error.details.map((d: any) => d.pointer)).toEqual(["/channel"]);

      const ok = await upload({ bytes: PDF, type: "application/pdf", name: "ok.pdf", channel: "whatsapp" });
      expect(ok.status).toBe(201);
    } finally {
      restore();
    }
  });
});

describe("quota", () => {
  test("over media_quota_mb → 422 STORAGE_LIMIT_REACHED and no file left on disk", async () => {
    const before = companyFiles().sort();
    const big = new Uint8Array(1024 * 1024); // 1 MB of zeros: over the 1 MB quota with what is stored already
    const res = await upload({ bytes: big, type: "application/octet-stream", name: "big.bin" });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe("STORAGE_LIMIT_REACHED");
    expect(companyFiles().sort()).toEqual(before);
  });
});

describe("quota under concurrency", () => {
  test("two uploads that fit alone but not together: one 201, one STORAGE_LIMIT_REACHED, one file", async () => {
    const before = companyFiles().length;
    const half = () => upload({ bytes: new Uint8Array(600 * 1024), type: "application/octet-stream", name: "half.bin" });
    const results = await Promise.all([half(), half()]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 422]);
    expect(results.find((r) => r.status === 422)!.body.error.code).toBe("STORAGE_LIMIT_REACHED");
    expect(companyFiles().length).toBe(before + 1);
    expect(companyFiles().filter((f) => f.endsWith(".tmp"))).toEqual([]);
    const ok = results.find((r) => r.status === 201)!.body.data.id;
    expect((await app.request("DELETE", `/media/${ok}`)).status).toBe(200);
  });
});

/** The company's quota counter (media_usage), and what its media rows and files add up to. */
async function usage(companyId = app.company.id) {
  const counter = ((await app.deps.db.sql("SELECT bytes FROM media_usage WHERE company_id = ?").get(companyId)) as { bytes: number } | null)?.bytes ?? 0;
  const rows = Number(((await app.deps.db.sql("SELECT coalesce(sum(size), 0) AS n FROM media WHERE company_id = ?").get(companyId)) as { n: number }).n);
  const dir = join(app.dir, "media", companyId);
  const files = companyFiles(companyId).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  return { counter, rows, files };
}

describe("quota counter under concurrency (media_usage, DESIGN §15)", () => {
  test("5 uploads side by side that fit 3 at a time: exactly three 201s; the counter is the files' sum", async () => {
    const quota = 1024 * 1024;
    const start = await usage();
    expect(start.counter).toBe(start.rows); // what the earlier tests left is counted
    const room = quota - start.counter;
    const size = Math.floor(room / 3); // 3 × size fits, 4 × size does not
    expect(4 * size).toBeGreaterThan(room);
    const one = () => upload({ bytes: new Uint8Array(size), type: "application/octet-stream", name: "third.bin" });
    const results = await Promise.all([one(), one(), one(), one(), one()]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 422, 422]);
    for (const r of results.filter((r) => r.status === 422)) expect(r.body.error.code).toBe("STORAGE_LIMIT_REACHED");
    expect(await usage()).toEqual({ counter: start.counter + 3 * size, rows: start.counter + 3 * size, files: start.files + 3 * size });
    expect(companyFiles().filter((f) => f.endsWith(".tmp"))).toEqual([]);

    // Deletes give the bytes back, each once: the same media deleted twice side by side is one 200 and one 404.
    const [first, ...rest] = results.filter((r) => r.status === 201).map((r) => r.body.data.id as string);
    const twice = await Promise.all([app.request("DELETE", `/media/${first}`), app.request("DELETE", `/media/${first}`)]);
    expect(twice.map((r) => r.status).sort()).toEqual([200, 404]);
    expect((await usage()).counter).toBe(start.counter + 2 * size);
    for (const id of rest) expect((await app.request("DELETE", `/media/${id}`)).status).toBe(200);
    expect(await usage()).toEqual(start);
  });
});

describe("delete", () => {
  test("unused media: deleted, file removed, 404 afterwards", async () => {
    const up = await upload({});
    expect(up.status).toBe(201);
    const id = up.body.data.id;
    const path = join(app.dir, "media", app.company.id, id);
    expect(existsSync(path)).toBe(true);
    const del = await app.request("DELETE", `/media/${id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ data: { id, deleted: true } });
    expect(existsSync(path)).toBe(false);
    expect((await app.request("GET", `/media/${id}`)).status).toBe(404);
    expect((await app.request("GET", `/media/${id}/content`)).status).toBe(404);
    expect((await app.request("DELETE", `/media/${id}`)).status).toBe(404);
  });

  test("409 MEDIA_IN_USE while a queued message references it (media or template header); deletable once sent", async () => {
    const up = await upload({});
    const m = up.body.data;
    const stored = { id: m.id, path: join(app.dir, "media", app.company.id, m.id), mimeType: m.mimeType, filename: m.filename, size: m.size };
    const msgId = newId();
    const insert = app.deps.db.sql(
      `INSERT INTO messages (id, company_id, conversation_id, contact_id, channel, channel_account_id, direction, type, content, address, status,
         price_type, unit_price, charged, refunded, metadata, created_at, updated_at)
       VALUES (?, ?, 'conv', 'contact', 'whatsapp', 'wa-main', 'outbound', ?, ?, '+15550100', 'queued', 'free', 0, 0, 0, '{}', 0, 0)`,
    );
    // Each with its dispatch job, as every queued message has (the check searches the dispatch backlog).
    const queued = async (id: string, type: string, content: object) => {
      await insert.run(id, app.company.id, type, JSON.stringify(content));
      await app.deps.db.unit(async () => app.deps.queue.enqueueJob({ type: DISPATCH_JOB, payload: { messageId: id }, groupKey: "wa-main" }));
    };
    await queued(msgId, "media", { type: "media", media: { file: stored } });
    let del = await app.request("DELETE", `/media/${m.id}`);
    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe("MEDIA_IN_USE");
    expect(del.body.error.message).toContain(msgId);
    expect(existsSync(stored.path)).toBe(true);

    await app.deps.db.sql("UPDATE messages SET status = 'sent' WHERE id = ?").run(msgId);
    const tplId = newId();
    await queued(tplId, "template", { type: "template", template: { name: "t", headerMedia: { file: stored } } });
    del = await app.request("DELETE", `/media/${m.id}`);
    expect(del.status).toBe(409);

    await app.deps.db.sql("UPDATE messages SET status = 'failed' WHERE id = ?").run(tplId);
    del = await app.request("DELETE", `/media/${m.id}`);
    expect(del.status).toBe(200);
    expect(existsSync(stored.path)).toBe(false);
  });
});

describe("with the messaging engine", () => {
  test("POST /messages with the media id: 409 while queued, deletable once sent; the stored file is what was sent", async () => {
    await inbound(app, "whatsapp", { phone: "+14155550199" }, "hi", 60_000);
    const up = await upload({ bytes: JPEG, type: "image/jpeg", name: "m.jpg", channel: "whatsapp" });
    expect(up.status).toBe(201);
    const id = up.body.data.id;
    const sent = await app.request("POST", "/messages", {
      body: { channel: "whatsapp", to: { phone: "+14155550199" }, type: "media", media: { mediaId: id } },
    });
    expect(sent.status).toBe(202);
    const busy = await app.request("DELETE", `/media/${id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe("MEDIA_IN_USE");
    await app.deps.queue.drain();
    const msg = await app.request("GET", `/messages/${sent.body.data.id}`);
    expect(msg.body.data.status).not.toBe("queued");
    expect((await app.request("DELETE", `/media/${id}`)).status).toBe(200);
  });

  test.if(TEST_ENGINE === "postgres")(
    "a DELETE racing a send that holds the file (units side by side): the DELETE waits for the send, then answers 409",
    async () => {
      await inbound(app, "whatsapp", { phone: "+14155550198" }, "hi", 60_000);
      const up = await upload({ bytes: JPEG, type: "image/jpeg", name: "race.jpg", channel: "whatsapp" });
      const id = up.body.data.id;
      // The send is held inside its unit just after it took the file (holdForUse), before it commits.
      const { atGate, open, restore } = holdAt(mediaStore(app.deps.db), "holdForUse", "after");
      try {
        const sending = app.request("POST", "/messages", {
          body: { channel: "whatsapp", to: { phone: "+14155550198" }, type: "media", media: { mediaId: id } },
        });
        await atGate;
        let settled = false;
        const deleting = app.request("DELETE", `/media/${id}`).finally(() => (settled = true));
        await Bun.sleep(300);
        expect(settled).toBe(false); // the DELETE waits for the send's hold on the row
        open();
        expect((await sending).status).toBe(202);
        const del = await deleting;
        // Without the hold it deleted the file under the queued message (200).
        expect([del.status, del.body.error?.code]).toEqual([409, "MEDIA_IN_USE"]);
        expect((await app.request("GET", `/media/${id}`)).status).toBe(200);
      } finally {
        restore();
      }
    },
  );
});

describe("companies are isolated", () => {
  test("another company's media id is 404 everywhere", async () => {
    const up = await upload({});
    const id = up.body.data.id;
    const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
    const { key } = await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "o", scopes: ["*"] });
    for (const [method, path] of [
      ["GET", `/media/${id}`],
      ["GET", `/media/${id}/content`],
      ["DELETE", `/media/${id}`],
    ] as const) {
      const res = await app.request(method, path, { key });
      expect(res.status).toBe(404);
    }
    expect((await app.request("GET", "/media", { key })).body.data).toEqual([]);
    expect((await app.request("GET", `/media/${id}`)).status).toBe(200);
  });
});
