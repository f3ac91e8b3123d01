// The files of the edge's per-hostname certificates (the `local` and `acme` sources,
// certificates.ts): `<dir>/<hostname>/<fingerprint>.crt` and `.key` (0600). The fingerprint in the
// name makes a renewed certificate a new path in nginx's configuration, so nginx reloads and loads it.
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DAY = 86400_000;
/** A certificate with fewer days left is renewed. */
export const RENEW_BEFORE_DAYS = 30;

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

/** A certificate in hand: its files and when it expires (ms). */
export interface Held {
  files: CertificateFiles;
  notAfter: number;
}

/**
 * Whether a certificate is good for a hostname of the table: for a wildcard (`*.example.com`) one
 * that names that wildcard itself in its subjectAltName (it then covers exactly the names the
 * wildcard serves: one label under its base); else one that names the hostname, directly or by a
 * wildcard of its own.
 */
export function covers(x: X509Certificate, hostname: string): boolean {
  if (!hostname.startsWith('*.')) return x.checkHost(hostname) !== undefined;
  return (x.subjectAltName ?? '').split(', ').some((e) => e.toLowerCase() === `dns:${hostname}`);
}

export const fingerprint = (x: X509Certificate) => createHash('sha256').update(x.raw).digest('hex').slice(0, 16);

/** Writes a file whole (a temporary name, then renamed): nginx never reads half of one. */
export function writeWhole(path: string, text: string, mode: number): void {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
}

/**
 * The latest certificate kept under `<dir>/<hostname>/` that names `hostname`, has its key, and
 * that `accept` takes (say, issued by the current CA); null when there is none.
 */
export function keptCertificate(dir: string, hostname: string, accept: (x: X509Certificate) => boolean): Held | null {
  const hostDir = join(dir, hostname);
  if (!existsSync(hostDir)) return null;
  let best: Held | null = null;
  for (const f of readdirSync(hostDir)) {
    if (!f.endsWith('.crt')) continue;
    const keyFile = join(hostDir, f.replace(/\.crt$/, '.key'));
    try {
      const x = new X509Certificate(readFileSync(join(hostDir, f)));
      if (!existsSync(keyFile) || !covers(x, hostname) || !accept(x)) continue;
      const notAfter = Date.parse(x.validTo);
      if (!best || notAfter > best.notAfter) best = { files: { certFile: join(hostDir, f), keyFile }, notAfter };
    } catch {
      // An unreadable file: ignored, a new certificate replaces it.
    }
  }
  return best;
}

/**
 * Keeps `hostname`'s new certificate (PEM, its chain after it) and key, and removes the pair it
 * replaces: nginx holds what it loaded, and the next configuration names the new one.
 */
export function storeCertificate(dir: string, hostname: string, certPem: string, keyPem: string): Held {
  const x = new X509Certificate(certPem);
  const hostDir = join(dir, hostname);
  mkdirSync(hostDir, { recursive: true, mode: 0o700 });
  const base = join(hostDir, fingerprint(x));
  const files = { certFile: `${base}.crt`, keyFile: `${base}.key` };
  writeWhole(files.keyFile, keyPem, 0o600);
  writeWhole(files.certFile, certPem, 0o644);
  for (const f of readdirSync(hostDir)) if (!files.certFile.endsWith(f) && !files.keyFile.endsWith(f)) rmSync(join(hostDir, f), { force: true });
  return { files, notAfter: Date.parse(x.validTo) };
}
