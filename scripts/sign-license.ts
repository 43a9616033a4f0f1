/**
 * Writes a signed license file. Development: `bun scripts/sign-license.ts --company default --modules
 * pipeline,sources --expires 2027-12-31T00:00:00Z --out license.json` (signs with the development key of
 * test/fixtures). Vendor: add `--key PATH` to the private key (base64 PKCS#8 DER) matching the public key
 * embedded by `make release`.
 */
import { createPrivateKey, sign } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";

export function signLicense({
  company,
  modules,
  expiresAt,
  privateKey,
}: {
  company: string;
  modules: string[];
  expiresAt: string;
  privateKey: string;
}): string {
  const key = createPrivateKey({ key: Buffer.from(privateKey.trim(), "base64"), format: "der", type: "pkcs8" });
  const payload = JSON.stringify({ company, modules, expiresAt, issuedAt: new Date().toISOString() });
  return JSON.stringify({ payload, signature: sign(null, Buffer.from(payload), key).toString("base64") }, null, 2) + "\n";
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { company: { type: "string" }, modules: { type: "string" }, expires: { type: "string" }, out: { type: "string" }, key: { type: "string" } },
  });
  if (!values.company || !values.modules || !values.expires || !values.out) {
    console.error("usage: bun scripts/sign-license.ts --company SLUG --modules a,b --expires ISO --out FILE [--key PRIVATE_KEY_FILE]");
    process.exit(1);
  }
  const keyFile = values.key ?? join(import.meta.dir, "../test/fixtures/license-dev.private.key");
  writeFileSync(
    values.out,
    signLicense({ company: values.company, modules: values.modules.split(","), expiresAt: values.expires, privateKey: readFileSync(keyFile, "utf8") }),
  );
  console.log(`wrote ${values.out}`);
}
