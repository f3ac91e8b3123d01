// The `acme` certificate source (SLIPWAY_EDGE_CERTIFICATES=acme): one certificate per hostname of
// the edge's table from an ACME directory (Let's Encrypt by default), validated by HTTP-01.
//
// - The account: a P-256 key made once, `<root>/<directory>/account.key` (0600), registered (or
//   found again: the same key is the same account) at the first order of each start; the account's
//   URL is written beside it for the operator. `<directory>` is the directory URL's host and a
//   digest of the URL, so staging and production keep their own accounts and certificates.
// - Orders run in the background, a few at a time: `forHosts` answers what is valid now and asks
//   for the missing or due certificates (fewer than RENEW_BEFORE_DAYS left), and `issued()` makes
//   the edge apply its table again once one landed. A hostname waiting for its first certificate
//   is served over HTTP only; a renewing one keeps its current certificate meanwhile.
// - HTTP-01: the key authorization is written to `<challengeDir>/<token>`, which nginx serves at
//   `/.well-known/acme-challenge/<token>` for every hostname (nginx/config.ts). The client's own
//   check of that URL is skipped: it would ask port 80 of the name from here, which behind NAT or
//   a load balancer may not be the edge, and the directory checks anyway.
// - A failed order is logged (its message, never a key) and retried after a delay that doubles per
//   failure (RETRY_FIRST_MS, up to RETRY_MAX_MS): Let's Encrypt allows 5 failed validations per
//   hostname and hour. It holds up no other hostname and no apply.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import type * as AcmeClient from 'acme-client';
import { lazy } from '../lazy.js';
import { DAY, keptCertificate, RENEW_BEFORE_DAYS, storeCertificate, writeWhole, type CertificateFiles, type Held } from './certificate-store.js';
import type { AcmeHooks, AcmeLog, Certificates } from './certificates.js';
import type { AcmeSetting } from './settings.js';

const loadAcme = lazy<typeof AcmeClient>('acme-client');

/** Orders running at once. */
const CONCURRENCY = 2;
/** The wait after a hostname's first failed order; it doubles with each failure in a row. */
const RETRY_FIRST_MS = 5 * 60_000;
const RETRY_MAX_MS = 6 * 3600_000;
/** An HTTP-01 token is base64url (RFC 8555 §8.3); anything else is not written as a file name. */
const TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

/** `<host>-<digest>` of a directory URL: a folder name of its own per directory. */
export function directoryFolder(url: string): string {
  const host = new URL(url).host.replace(/[^A-Za-z0-9.-]/g, '_');
  return `${host}-${createHash('sha256').update(url).digest('hex').slice(0, 8)}`;
}

export class AcmeCertificates implements Certificates {
  /** The account's folder: its key, its URL, `hosts/<hostname>/` the certificates. */
  readonly dir: string;
  private hostsDir: string;
  private held = new Map<string, Held>();
  private failed = new Map<string, { failures: number; retryAt: number }>();
  /** Hostnames queued or being ordered. */
  private ordering = new Set<string>();
  private queue: string[] = [];
  private running = 0;
  /** The hostnames the last table named: a queued order for one no longer there is dropped. */
  private wanted = new Set<string>();
  private client: Promise<AcmeClient.Client> | null = null;

  constructor(
    private setting: AcmeSetting,
    root: string,
    private log: AcmeLog,
    private hooks: AcmeHooks,
    private now = () => Date.now(),
  ) {
    this.dir = join(root, directoryFolder(setting.directory));
    this.hostsDir = join(this.dir, 'hosts');
  }

  async forHosts(hostnames: string[]): Promise<Map<string, CertificateFiles>> {
    const out = new Map<string, CertificateFiles>();
    const now = this.now();
    // HTTP-01 cannot prove a wildcard (an ACME server issues one only through DNS-01): a wildcard
    // domain is served over HTTP only (certificates.ts says why).
    this.wanted = new Set(hostnames.filter((h) => !h.startsWith('*.')));
    for (const h of this.wanted) {
      let held = this.held.get(h);
      if (!held) {
        held = keptCertificate(this.hostsDir, h, (x) => Date.parse(x.validTo) > now) ?? undefined;
        if (held) this.held.set(h, held);
      }
      if (held && held.notAfter > now) out.set(h, held.files);
      if (!held || held.notAfter - now < RENEW_BEFORE_DAYS * DAY) this.order(h, now);
    }
    return out;
  }

  /** Orders in flight or queued (tests wait for them). */
  get pending(): number {
    return this.ordering.size;
  }

  private order(hostname: string, now: number): void {
    if (this.ordering.has(hostname) || (this.failed.get(hostname)?.retryAt ?? 0) > now) return;
    this.ordering.add(hostname);
    this.queue.push(hostname);
    this.pump();
  }

  private pump(): void {
    while (this.running < CONCURRENCY && this.queue.length) {
      const h = this.queue.shift()!;
      if (!this.wanted.has(h)) {
        this.ordering.delete(h);
        continue;
      }
      this.running++;
      void this.issue(h)
        .then(
          (held) => {
            this.held.set(h, held);
            this.failed.delete(h);
            this.log.info({ hostname: h, notAfter: new Date(held.notAfter).toISOString() }, 'edge: ACME certificate issued');
            this.hooks.issued();
          },
          (e: Error) => {
            const failures = (this.failed.get(h)?.failures ?? 0) + 1;
            const wait = Math.min(RETRY_FIRST_MS * 2 ** (failures - 1), RETRY_MAX_MS);
            this.failed.set(h, { failures, retryAt: this.now() + wait });
            this.log.warn(
              { err: e.message, hostname: h, failures, retryInSeconds: wait / 1000 },
              'edge: the ACME order failed; the hostname keeps its current certificate, or is served over HTTP only, until a later order succeeds',
            );
          },
        )
        .finally(() => {
          this.ordering.delete(h);
          this.running--;
          this.pump();
        });
    }
  }

  private async issue(hostname: string): Promise<Held> {
    const acme = loadAcme();
    const client = await this.account();
    // A common name is at most 64 characters; the name that counts is the subjectAltName.
    const [key, csr] = await acme.crypto.createCsr({ commonName: hostname.length <= 64 ? hostname : undefined, altNames: [hostname] });
    const chain = await client.auto({
      csr,
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        mkdirSync(this.hooks.challengeDir, { recursive: true });
        writeWhole(this.challengeFile(challenge.token), keyAuthorization, 0o644);
      },
      challengeRemoveFn: async (_authz, challenge) => rmSync(this.challengeFile(challenge.token), { force: true }),
    });
    return storeCertificate(this.hostsDir, hostname, chain, key.toString());
  }

  private challengeFile(token: string): string {
    if (!TOKEN.test(token)) throw new Error('the ACME server sent an HTTP-01 token that is not base64url');
    return join(this.hooks.challengeDir, token);
  }

  /** The registered client, made at the first order (again after a failure). */
  private account(): Promise<AcmeClient.Client> {
    return (this.client ??= this.register().catch((e: Error) => {
      this.client = null;
      throw e;
    }));
  }

  private async register(): Promise<AcmeClient.Client> {
    const acme = loadAcme();
    const { directory, email, caFile } = this.setting;
    // acme-client has one HTTP client for the process; only it talks to ACME directories here.
    if (caFile) acme.axios.defaults.httpsAgent = new Agent({ ca: [...rootCertificates, readFileSync(caFile, 'utf8')], keepAlive: true });
    const client = new acme.Client({ directoryUrl: directory, accountKey: await this.accountKey(), backoffMin: 1000, backoffMax: 10_000 });
    const contact = email ? { contact: [`mailto:${email}`] } : {};
    // The key's account when there is one (asking to create it again would be an update, which a
    // server refuses when nothing changes); else a new one.
    try {
      await client.createAccount({ onlyReturnExisting: true });
      if (email) await client.updateAccount(contact);
    } catch {
      await client.createAccount({ termsOfServiceAgreed: true, ...contact });
    }
    writeWhole(join(this.dir, 'account.url'), `${client.getAccountUrl()}\n`, 0o644);
    return client;
  }

  /** The account key, made and kept the first time. */
  private async accountKey(): Promise<string> {
    const path = join(this.dir, 'account.key');
    try {
      return readFileSync(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const key = (await loadAcme().crypto.createPrivateEcdsaKey('P-256')).toString();
    writeWhole(path, key, 0o600);
    return key;
  }
}
