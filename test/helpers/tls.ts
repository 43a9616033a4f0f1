/** Test certificates: a self-signed P-256 certificate for localhost made by openssl (on every machine here). */
import { spawnSync } from "bun";
import { join } from "node:path";

/** `<dir>/<name>.crt` and `.key`, valid `days` days. */
export function selfSignedCert(dir: string, name: string, days = 1): { cert: string; key: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const args = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", String(days), "-subj", "/CN=localhost"];
  const r = spawnSync(["openssl", ...args, "-keyout", key, "-out", cert]);
  if (r.exitCode !== 0) throw new Error(`openssl: ${r.stderr.toString()}`);
  return { cert, key };
}
