// The edge's certificates without nginx: local ones issued per hostname by Slipway's local CA (the
// CA of `--tls self-signed`), their key files the owner's alone, reused by the next Slipway and
// renewed before they expire; the operator's wildcard used for the names it covers; the settings
// that refuse what cannot work.
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import forge from 'node-forge';
import type { Config } from '../../src/shared/config.js';
import { LocalCertificates, OperatorCertificates, RENEW_BEFORE_DAYS, LOCAL_VALIDITY_DAYS } from '../../src/shared/edge/certificates.js';
import { createEdge } from '../../src/shared/edge/drivers.js';
import { edgeSettings } from '../../src/shared/edge/settings.js';
import { loadTls, localCa } from '../../src/shared/tls.js';

const DAY = 86400_000;
const log = () => {
  const warnings: string[] = [];
  return { warnings, warn: (_o: object, msg: string) => void warnings.push(msg) };
};
const config = (env: Record<string, string>) => ({ host: '127.0.0.1', apps: { env } }) as unknown as Config;

describe('edge certificates from the local CA', () => {
  let dataDir: string;
  before(() => (dataDir = mkdtempSync(join(tmpdir(), 'slipway-edge-certs-'))));
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('issues one per hostname, signed by the CA of --tls self-signed, keys mode 0600', async () => {
    const { caPath } = await loadTls({ mode: 'self-signed' }, dataDir);
    const ca = new X509Certificate(readFileSync(caPath!));
    const certs = new LocalCertificates(dataDir, log());
    const files = await certs.forHosts(['shop.localhost', 'www.example.com', 'shop.localhost']);
    assert.deepEqual([...files.keys()].sort(), ['shop.localhost', 'www.example.com']);
    for (const [hostname, f] of files) {
      const x = new X509Certificate(readFileSync(f.certFile));
      assert.ok(x.checkIssued(ca) && x.verify(ca.publicKey), 'issued by the local CA');
      assert.equal(x.subjectAltName, `DNS:${hostname}`);
      assert.equal(x.checkHost('other.example.com'), undefined);
      assert.ok(Math.abs(Date.parse(x.validTo) - Date.now() - LOCAL_VALIDITY_DAYS * DAY) < 2 * DAY);
      assert.ok(x.checkPrivateKey(createPrivateKey(readFileSync(f.keyFile))));
      assert.equal(statSync(f.keyFile).mode & 0o777, 0o600);
      assert.ok(f.certFile.startsWith(join(dataDir, 'edge', 'certificates', 'local', hostname)));
    }
    assert.equal(localCa(dataDir).path, caPath, 'one CA under the data directory');
  });

  it('is reused by the next Slipway and renewed when fewer than 30 days remain', async () => {
    const first = (await new LocalCertificates(dataDir, log()).forHosts(['shop.localhost'])).get('shop.localhost')!;
    const again = (await new LocalCertificates(dataDir, log()).forHosts(['shop.localhost'])).get('shop.localhost')!;
    assert.deepEqual(again, first, 'the files on disk are reused');
    const later = () => Date.now() + (LOCAL_VALIDITY_DAYS - RENEW_BEFORE_DAYS + 1) * DAY;
    const renewed = (await new LocalCertificates(dataDir, log(), later).forHosts(['shop.localhost'])).get('shop.localhost')!;
    assert.notEqual(renewed.certFile, first.certFile, 'a renewed certificate is a new path (nginx reloads)');
    assert.ok(!existsSync(first.certFile) && !existsSync(first.keyFile), 'the replaced pair is removed');
    assert.ok(Date.parse(new X509Certificate(readFileSync(renewed.certFile)).validTo) > later() + 60 * DAY);
  });

  it('reissues a certificate the current CA did not sign (the CA was replaced)', async () => {
    const other = mkdtempSync(join(tmpdir(), 'slipway-edge-certs-'));
    try {
      const before = (await new LocalCertificates(other, log()).forHosts(['a.localhost'])).get('a.localhost')!;
      rmSync(join(other, 'tls'), { recursive: true });
      const after = (await new LocalCertificates(other, log()).forHosts(['a.localhost'])).get('a.localhost')!;
      assert.notEqual(after.certFile, before.certFile);
      const ca = new X509Certificate(readFileSync(localCa(other).path));
      assert.ok(new X509Certificate(readFileSync(after.certFile)).checkIssued(ca));
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

describe("the operator's certificate files", () => {
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'slipway-edge-files-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A self-signed certificate for `names`, written to cert.pem and key.pem in `dir`. */
  const write = (names: string[]) => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      publicKeyEncoding: { type: 'spki', format: 'pem' },
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    });
    const cert = forge.pki.createCertificate();
    cert.publicKey = forge.pki.publicKeyFromPem(publicKey);
    cert.serialNumber = '01';
    cert.validity.notBefore = new Date(Date.now() - DAY);
    cert.validity.notAfter = new Date(Date.now() + 30 * DAY);
    cert.setSubject([{ name: 'commonName', value: names[0]! }]);
    cert.setIssuer([{ name: 'commonName', value: names[0]! }]);
    cert.setExtensions([{ name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) }]);
    cert.sign(forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey, forge.md.sha256.create());
    writeFileSync(join(dir, 'cert.pem'), forge.pki.certificateToPem(cert));
    writeFileSync(join(dir, 'key.pem'), privateKey);
    return privateKey;
  };

  it('serves the names a wildcard covers, from a copy kept by fingerprint', async () => {
    write(['*.apps.example.com', 'apps.example.com']);
    const certs = new OperatorCertificates(join(dir, 'cert.pem'), join(dir, 'key.pem'), dir, log());
    const files = await certs.forHosts(['shop.apps.example.com', 'apps.example.com', 'a.b.apps.example.com', 'shop.example.org']);
    assert.deepEqual([...files.keys()], ['shop.apps.example.com', 'apps.example.com']);
    const f = files.get('apps.example.com')!;
    assert.equal(readFileSync(f.certFile, 'utf8'), readFileSync(join(dir, 'cert.pem'), 'utf8'));
    assert.equal(statSync(f.keyFile).mode & 0o777, 0o600);
    // The operator renews: the next table names the new copy.
    write(['*.apps.example.com']);
    const renewed = (await certs.forHosts(['shop.apps.example.com'])).get('shop.apps.example.com')!;
    assert.notEqual(renewed.certFile, f.certFile);
  });

  it('a key of another certificate serves no hostname, with a warning', async () => {
    write(['*.apps.example.com']);
    const otherKey = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    writeFileSync(join(dir, 'other-key.pem'), otherKey.privateKey);
    const l = log();
    const files = await new OperatorCertificates(join(dir, 'cert.pem'), join(dir, 'other-key.pem'), dir, l).forHosts(['shop.apps.example.com']);
    assert.equal(files.size, 0);
    assert.match(l.warnings.join('\n'), /key does not belong/);
  });
});

describe('HTTPS settings', () => {
  it('HTTPS is off unless a port is set; 0 is any free port; local certificates by default', () => {
    assert.equal(edgeSettings(config({})).httpsPort, null);
    const s = edgeSettings(config({ SLIPWAY_EDGE_HTTPS_PORT: '0', SLIPWAY_EDGE_HTTPS_REDIRECT: '1' }));
    assert.deepEqual([s.httpsPort, s.httpsRedirect, s.certificates], [0, true, { mode: 'local' }]);
  });

  it("acme: Let's Encrypt production unless a directory is set", () => {
    const s = edgeSettings(config({ SLIPWAY_EDGE_HTTPS_PORT: '443', SLIPWAY_EDGE_CERTIFICATES: 'acme', SLIPWAY_EDGE_ACME_EMAIL: 'ops@example.com' }));
    assert.deepEqual(s.certificates, { mode: 'acme', directory: 'https://acme-v02.api.letsencrypt.org/directory', email: 'ops@example.com', caFile: null });
  });

  it('refuses what cannot work, saying why', () => {
    assert.throws(() => edgeSettings(config({ SLIPWAY_EDGE_HTTPS_REDIRECT: '1' })), /needs SLIPWAY_EDGE_HTTPS_PORT/);
    assert.throws(() => edgeSettings(config({ SLIPWAY_EDGE_CERTIFICATES: 'acme' })), /acme needs SLIPWAY_EDGE_HTTPS_PORT/);
    assert.throws(
      () => edgeSettings(config({ SLIPWAY_EDGE_HTTPS_PORT: '443', SLIPWAY_EDGE_CERTIFICATES: 'acme', SLIPWAY_EDGE_ACME_DIRECTORY: 'http://ca.test/dir' })),
      /ACME_DIRECTORY must be an https URL/,
    );
    assert.throws(() => edgeSettings(config({ SLIPWAY_EDGE_CERTIFICATES: 'files' })), /SLIPWAY_EDGE_CERTIFICATE_FILE and SLIPWAY_EDGE_CERTIFICATE_KEY_FILE/);
    assert.throws(() => edgeSettings(config({ SLIPWAY_EDGE_CERTIFICATES: 'vault' })), /local, files or acme/);
    assert.throws(() => createEdge(config({ SLIPWAY_EDGE: 'node', SLIPWAY_EDGE_HTTPS_PORT: '443' }), {} as never, {} as never), /needs the nginx edge/);
  });
});
