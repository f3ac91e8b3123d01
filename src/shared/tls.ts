// HTTPS material: either the operator's certificate files, or (`--tls self-signed`) a local CA
// and a localhost certificate created once and kept in the data directory. The edge's local
// certificates (edge/certificates.ts) are issued by the same CA.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Forge from 'node-forge';
import { lazy } from './lazy.js';
import type { Config } from './config.js';

const loadForge = lazy<typeof Forge>('node-forge');

export interface TlsMaterial {
  cert: string;
  key: string;
  caPath?: string;
}

function serial(): string {
  return '01' + loadForge().util.bytesToHex(loadForge().random.getBytesSync(15));
}

function makeCa() {
  const keys = loadForge().pki.rsa.generateKeyPair(2048);
  const cert = loadForge().pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 10 * 365 * 86400_000);
  const attrs = [
    { name: 'commonName', value: 'Slipway local CA' },
    { name: 'organizationName', value: 'Slipway' },
  ];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, loadForge().md.sha256.create());
  return { cert, keys };
}

function makeLeaf(ca: { cert: Forge.pki.Certificate; key: Forge.pki.rsa.PrivateKey }) {
  const keys = loadForge().pki.rsa.generateKeyPair(2048);
  const cert = loadForge().pki.createCertificate();
  cert.publicKey = keys.publicKey;
  cert.serialNumber = serial();
  cert.validity.notBefore = new Date(Date.now() - 60_000);
  cert.validity.notAfter = new Date(Date.now() + 825 * 86400_000);
  cert.setSubject([{ name: 'commonName', value: 'localhost' }]);
  cert.setIssuer(ca.cert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [
        { type: 2, value: 'localhost' },
        { type: 7, ip: '127.0.0.1' },
        { type: 7, ip: '::1' },
      ],
    },
  ]);
  cert.sign(ca.key, loadForge().md.sha256.create());
  return { cert, keys };
}

/** The local CA's certificate file (PEM) under the data directory: what clients trust (`curl --cacert`). */
export const localCaPath = (dataDir: string) => join(dataDir, 'tls', 'ca.pem');

/**
 * Slipway's local CA, created once under `<data dir>/tls` (its key mode 0600) and reused: the one
 * of `--tls self-signed` and of the edge's local certificates (edge/certificates.ts).
 */
export function localCa(dataDir: string): { cert: Forge.pki.Certificate; key: Forge.pki.rsa.PrivateKey; certPem: string; path: string } {
  const dir = join(dataDir, 'tls');
  mkdirSync(dir, { recursive: true });
  const caCert = localCaPath(dataDir);
  const caKey = join(dir, 'ca-key.pem');
  if (!existsSync(caCert) || !existsSync(caKey)) {
    const ca = makeCa();
    writeFileSync(caKey, loadForge().pki.privateKeyToPem(ca.keys.privateKey), { mode: 0o600 });
    writeFileSync(caCert, loadForge().pki.certificateToPem(ca.cert));
  }
  const certPem = readFileSync(caCert, 'utf8');
  return {
    cert: loadForge().pki.certificateFromPem(certPem),
    key: loadForge().pki.privateKeyFromPem(readFileSync(caKey, 'utf8')) as Forge.pki.rsa.PrivateKey,
    certPem,
    path: caCert,
  };
}

/** A random positive serial number (hex) for a certificate. */
export const certificateSerial = serial;

export async function loadTls(tls: NonNullable<Config['tls']>, dataDir: string): Promise<TlsMaterial> {
  if (tls.mode === 'files') return { cert: readFileSync(tls.cert, 'utf8'), key: readFileSync(tls.key, 'utf8') };
  const dir = join(dataDir, 'tls');
  const cert = join(dir, 'localhost.pem');
  const key = join(dir, 'localhost-key.pem');
  const ca = localCa(dataDir);
  if (!existsSync(cert) || !existsSync(key)) {
    const leaf = makeLeaf(ca);
    writeFileSync(key, loadForge().pki.privateKeyToPem(leaf.keys.privateKey), { mode: 0o600 });
    writeFileSync(cert, loadForge().pki.certificateToPem(leaf.cert));
  }
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8'), caPath: ca.path };
}
