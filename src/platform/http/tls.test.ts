import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { selfSignedCert } from "../../../test/helpers/tls";
import { daysLeft, readTlsFiles, TlsFilesError } from "./tls";

let dir: string;
const pair = (name: string, days: number) => {
  const { cert, key } = selfSignedCert(dir, name, days);
  return { certFile: cert, keyFile: key };
};
let a: { certFile: string; keyFile: string };
let b: { certFile: string; keyFile: string };
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sb-tls-"));
  a = pair("a", 30);
  b = pair("b", 1);
  writeFileSync(join(dir, "junk.pem"), "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a matching pair: the PEM text for Bun.serve and the parsed certificate", () => {
  const files = readTlsFiles(a);
  expect(files.cert).toStartWith("-----BEGIN CERTIFICATE-----");
  expect(files.key).toContain("PRIVATE KEY");
  expect(files.certificate.subject).toBe("CN=localhost");
  expect(daysLeft(files.certificate, new Date())).toBeGreaterThan(29);
  expect(daysLeft(files.certificate, new Date())).toBeLessThanOrEqual(30);
});

test.each([
  [
    "an unreadable certificate",
    () => ({ certFile: join(dir, "missing.crt"), keyFile: a.keyFile }),
    /^key "server\.tls_cert_file": cannot read .*missing\.crt \(ENOENT\)$/,
  ],
  [
    "a certificate that is not PEM",
    () => ({ certFile: join(dir, "junk.pem"), keyFile: a.keyFile }),
    /^key "server\.tls_cert_file": .*junk\.pem is not a PEM certificate$/,
  ],
  [
    "a key that is not PEM",
    () => ({ certFile: a.certFile, keyFile: join(dir, "junk.pem") }),
    /^key "server\.tls_key_file": .*junk\.pem is not a PEM private key/,
  ],
  [
    "the key of another certificate",
    () => ({ certFile: a.certFile, keyFile: b.keyFile }),
    /^key "server\.tls_key_file": .*b\.key is not the private key of the certificate in .*a\.crt$/,
  ],
])("%s: an error naming the key", (_, files, message) => {
  expect(() => readTlsFiles(files())).toThrow(TlsFilesError);
  expect(() => readTlsFiles(files())).toThrow(message);
});
