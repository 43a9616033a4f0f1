/**
 * HTTPS without a proxy (DESIGN §23): the PEM files named by `[server] tls_cert_file` and `tls_key_file`,
 * read and checked before they are served — at start-up and again on SIGHUP, so a broken renewal (a
 * truncated file, a key of another certificate) never replaces a certificate that works.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";

export class TlsFilesError extends Error {}

export interface TlsFiles {
  /** PEM text as Bun.serve's `tls` takes it. */
  cert: string;
  key: string;
  /** The leaf (first) certificate of `cert`. */
  certificate: X509Certificate;
}

function read(key: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    throw new TlsFilesError(`key "server.${key}": cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
}

export function readTlsFiles({ certFile, keyFile }: { certFile: string; keyFile: string }): TlsFiles {
  const cert = read("tls_cert_file", certFile);
  const key = read("tls_key_file", keyFile);
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(cert);
  } catch {
    throw new TlsFilesError(`key "server.tls_cert_file": ${certFile} is not a PEM certificate`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsFilesError(
      `key "server.tls_key_file": ${keyFile} is not a PEM private key (an encrypted key cannot be used: there is no one to type its passphrase)`,
    );
  }
  if (!certificate.checkPrivateKey(privateKey))
    throw new TlsFilesError(`key "server.tls_key_file": ${keyFile} is not the private key of the certificate in ${certFile}`);
  return { cert, key, certificate };
}

/** Days until the certificate expires (negative once it has). */
export function daysLeft(certificate: X509Certificate, now: Date): number {
  return (Date.parse(certificate.validTo) - now.getTime()) / 86_400_000;
}
