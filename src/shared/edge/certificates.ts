// The edge's HTTPS certificates (SLIPWAY_EDGE_HTTPS_PORT; the nginx driver): which hostnames of the
// table get one, and its files. Every hostname the table names has been decided by the hostname
// registry (system domains, short names, verified and enabled custom domains, a static site's
// preview names), so every one of them gets a certificate; names the table does not hold (unknown
// hosts, which nginx's default server sends to the origin) get none, and nginx refuses their
// handshake, as it refuses that of a hostname whose certificate is missing.
//
// A wildcard domain (`*.example.com`; nginx serves exactly one label under its base, as the
// registry routes it): `local` issues a certificate naming the wildcard itself, which covers exactly
// those names (a name under it that another service holds has its own server and certificate,
// which nginx chooses by SNI first); `files` uses the operator's certificate when it names that
// wildcard; `acme` issues none, and the wildcard domain is served over plain HTTP only (its HTTPS
// handshake refused, no redirect). An ACME server issues a wildcard only through DNS-01, which
// needs the operator's DNS provider; and issuing a certificate per name on demand, at its first
// handshake, would need Slipway at handshake time (nginx must keep serving while it is down) and
// let any client make it order certificates for names of its choosing, up to the CA's rate limits
// (Let's Encrypt: 50 per registered domain a week), which the installation's other names need.
// An operator who wants HTTPS there gives a wildcard certificate with `files`.
//
// - `local` (the default): one certificate per hostname, issued by Slipway's local CA (tls.ts, the
//   CA of `--tls self-signed`: `<data dir>/tls/ca.pem` is what clients trust), with a key of its
//   own, written under `<data dir>/edge/certificates/local/<hostname>/` (keys mode 0600), reused
//   across restarts, valid 90 days and renewed when fewer than 30 remain (checked at every table
//   build: each change and the 30 s resync). One per hostname rather than a wildcard for the base
//   domain: a custom domain needs its own anyway; OpenSSL (curl, Node) accepts no wildcard directly
//   under a single label (`*.localhost`, the default base domain); a wildcard would also name
//   hostnames nobody holds; and an ACME client validating by HTTP-01 (Let's Encrypt's default) can
//   issue exactly this shape, where a wildcard needs DNS-01 at the operator's DNS provider.
// - `files`: the operator's certificate and key (say a wildcard `*.<base domain>` their ACME
//   client renews), used for every hostname it covers; the others are served over HTTP only.
// - `acme`: one certificate per hostname from an ACME directory (Let's Encrypt), validated by
//   HTTP-01, ordered in the background (acme.ts).
//
// File names carry the certificate's fingerprint: a renewed certificate is a new path in the
// configuration, so nginx reloads and loads it.
import { createPrivateKey, generateKeyPair, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type Forge from 'node-forge';
import { lazy } from '../lazy.js';
import { certificateSerial, localCa } from '../tls.js';
import { AcmeCertificates } from './acme.js';
import {
  covers,
  DAY,
  fingerprint,
  keptCertificate,
  RENEW_BEFORE_DAYS,
  storeCertificate,
  writeWhole,
  type CertificateFiles,
  type Held,
} from './certificate-store.js';
import type { EdgeSettings } from './settings.js';
import type { EdgeTable } from './table.js';

const loadForge = lazy<typeof Forge>('node-forge');
const generate = promisify(generateKeyPair);

/** How long a local certificate is valid. */
export const LOCAL_VALIDITY_DAYS = 90;
/** Certificates issued at once (key generation runs in libuv's pool). */
const CONCURRENCY = 4;

export { RENEW_BEFORE_DAYS, type CertificateFiles };

interface Log {
  warn(obj: object, msg: string): void;
}

/** The `acme` source also says when a certificate was issued. */
export interface AcmeLog extends Log {
  info(obj: object, msg: string): void;
}

/** Where the edge's certificates come from. */
export interface Certificates {
  /** The files of each of `hostnames` that has a valid certificate (issued or renewed now where needed); the others are left out. */
  forHosts(hostnames: string[]): Promise<Map<string, CertificateFiles>>;
}

/** `<data dir>/edge/certificates`. */
export const certificatesDir = (dataDir: string) => join(dataDir, 'edge', 'certificates');

/** What the `acme` source needs of the edge: where nginx serves HTTP-01 answers from, and a call when a certificate landed. */
export interface AcmeHooks {
  challengeDir: string;
  issued(): void;
}

/** The certificates of the edge's settings, or null when HTTPS is off. */
export function edgeCertificates(settings: EdgeSettings, dataDir: string, log: AcmeLog, acme: AcmeHooks): Certificates | null {
  if (settings.httpsPort === null) return null;
  const c = settings.certificates;
  if (c.mode === 'files') return new OperatorCertificates(c.certFile, c.keyFile, dataDir, log);
  if (c.mode === 'acme') return new AcmeCertificates(c, join(certificatesDir(dataDir), 'acme'), log, acme);
  return new LocalCertificates(dataDir, log);
}

/** `table` with each host's certificate files (and the redirect setting for those that have one). */
export async function withCertificates(table: EdgeTable, certificates: Certificates, redirect: boolean): Promise<EdgeTable> {
  const files = await certificates.forHosts(table.hosts.map((h) => h.hostname));
  return {
    ...table,
    hosts: table.hosts.map((h) => {
      const tls = files.get(h.hostname) ?? null;
      return { ...h, tls, httpsRedirect: !!tls && redirect };
    }),
  };
}

/** Certificates issued by Slipway's local CA, one per hostname. */
export class LocalCertificates implements Certificates {
  private held = new Map<string, Held>();
  private issuing = new Map<string, Promise<Held>>();
  private ca: ReturnType<typeof localCa> | null = null;
  readonly dir: string;

  constructor(
    private dataDir: string,
    private log: Log,
    private now = () => Date.now(),
  ) {
    this.dir = join(certificatesDir(dataDir), 'local');
  }

  async forHosts(hostnames: string[]): Promise<Map<string, CertificateFiles>> {
    const out = new Map<string, CertificateFiles>();
    const queue = [...new Set(hostnames)];
    const work = async () => {
      for (let h = queue.shift(); h !== undefined; h = queue.shift()) {
        try {
          out.set(h, (await this.certificate(h)).files);
        } catch (e) {
          this.log.warn({ err: (e as Error).message, hostname: h }, 'edge: no certificate could be issued; the hostname is served over HTTP only');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, queue.length) }, work));
    return out;
  }

  private fresh = (h: Held | null | undefined): h is Held => !!h && h.notAfter - this.now() > RENEW_BEFORE_DAYS * DAY;

  private certificate(hostname: string): Promise<Held> {
    const known = this.held.get(hostname);
    if (this.fresh(known)) return Promise.resolve(known);
    let p = this.issuing.get(hostname);
    if (!p) {
      p = (async () => {
        const onDisk = known ? null : this.fromDisk(hostname);
        const h = this.fresh(onDisk) ? onDisk : await this.issue(hostname);
        this.held.set(hostname, h);
        return h;
      })().finally(() => this.issuing.delete(hostname));
      this.issuing.set(hostname, p);
    }
    return p;
  }

  private authority() {
    return (this.ca ??= localCa(this.dataDir));
  }

  /** The latest certificate kept for `hostname` that names it and was issued by the current CA. */
  private fromDisk(hostname: string): Held | null {
    const ca = new X509Certificate(this.authority().certPem);
    return keptCertificate(this.dir, hostname, (x) => x.checkIssued(ca) && x.verify(ca.publicKey));
  }

  private async issue(hostname: string): Promise<Held> {
    const forge = loadForge();
    const ca = this.authority();
    const { publicKey, privateKey } = await generate('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
    cert.serialNumber = certificateSerial();
    const now = this.now();
    cert.validity.notBefore = new Date(now - 3600_000);
    cert.validity.notAfter = new Date(now + LOCAL_VALIDITY_DAYS * DAY);
    // A common name is at most 64 characters; the name that counts is the subjectAltName.
    cert.setSubject([{ name: 'commonName', value: hostname.length <= 64 ? hostname : 'Slipway edge' }]);
    cert.setIssuer(ca.cert.subject.attributes);
    cert.setExtensions([
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: hostname }] },
      { name: 'subjectKeyIdentifier' },
      { name: 'authorityKeyIdentifier', keyIdentifier: ca.cert.generateSubjectKeyIdentifier().getBytes() },
    ]);
    cert.sign(ca.key, forge.md.sha256.create());
    return storeCertificate(this.dir, hostname, forge.pki.certificateToPem(cert), privateKey);
  }
}

/** The operator's certificate (SLIPWAY_EDGE_CERTIFICATES=files): copied under the data directory by fingerprint, re-read when its files change. */
export class OperatorCertificates implements Certificates {
  private loaded: { stamp: string; x: X509Certificate; files: CertificateFiles } | null = null;
  private warned = '';

  constructor(
    private certFile: string,
    private keyFile: string,
    dataDir: string,
    private log: Log,
    readonly dir = join(certificatesDir(dataDir), 'files'),
  ) {}

  async forHosts(hostnames: string[]): Promise<Map<string, CertificateFiles>> {
    const out = new Map<string, CertificateFiles>();
    let current: NonNullable<typeof this.loaded>;
    try {
      current = this.load();
    } catch (e) {
      this.warnOnce(`edge: the certificate files cannot be used (${(e as Error).message}); HTTPS serves no hostname`);
      return out;
    }
    if (Date.parse(current.x.validTo) < Date.now()) this.warnOnce(`edge: the certificate ${this.certFile} expired on ${current.x.validTo}`);
    for (const h of hostnames) if (covers(current.x, h)) out.set(h, current.files);
    return out;
  }

  private warnOnce(msg: string) {
    if (this.warned === msg) return;
    this.warned = msg;
    this.log.warn({ certFile: this.certFile, keyFile: this.keyFile }, msg);
  }

  private load(): NonNullable<typeof this.loaded> {
    const stamp = [this.certFile, this.keyFile].map((f) => `${statSync(f).mtimeMs}:${statSync(f).size}`).join('|');
    if (this.loaded?.stamp === stamp) return this.loaded;
    const certPem = readFileSync(this.certFile, 'utf8');
    const keyPem = readFileSync(this.keyFile, 'utf8');
    const x = new X509Certificate(certPem);
    if (!x.checkPrivateKey(createPrivateKey(keyPem))) throw new Error('the key does not belong to the certificate');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const base = join(this.dir, fingerprint(x));
    const files = { certFile: `${base}.crt`, keyFile: `${base}.key` };
    writeWhole(files.keyFile, keyPem, 0o600);
    // The whole chain as given (nginx sends every certificate of the file).
    writeWhole(files.certFile, certPem, 0o644);
    this.loaded = { stamp, x, files };
    this.warned = '';
    return this.loaded;
  }
}
