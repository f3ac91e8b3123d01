// Helpers of the domain suites: owners (real applications, stub static sites and load balancers),
// domain paths, simulation controls and certificates.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import forge from 'node-forge';
import { GENEROUS, type TestServer } from '../helpers/server.js';
import { expectStatus, uniqueName } from '../helpers/util.js';
import type { ServiceSummary } from '../../src/shared/services.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';

export { DEFAULT_CLUSTER };

/** Every tier generous, each with its own limit so the tier an operation counts in is visible in x-ratelimit-limit. */
export const LIMITS = { ...GENEROUS, service_creation: 5001, service_mutation: 7001 };

/** The domain fields every representation carries. */
export const DOMAIN_KEYS = ['created_at', 'dns_records', 'errors', 'id', 'is_enabled', 'is_primary', 'is_wildcard', 'name', 'status', 'type', 'updated_at'];

export interface Domain {
  id: string;
  name: string;
  status: 'VERIFICATION' | 'POINTING' | 'ACTIVE' | 'TIMED_OUT';
  type: 'SYSTEM' | 'CUSTOM';
  is_enabled: boolean;
  is_wildcard: boolean;
  is_primary: boolean;
  dns_records: { type: string; name: string; value: string }[] | null;
  errors: { type: string; message: string }[] | null;
  created_at: string;
  updated_at: string;
}

let counter = 0;
/** A hostname nobody else in the run uses. */
export const host = (label = 'www') => `${label}-${process.pid}-${++counter}.example.com`;

export async function createApp(s: TestServer, token?: string): Promise<{ id: string; name: string }> {
  const body = { display_name: uniqueName('Shop'), cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' };
  return expectStatus(await s.post('/applications', body, { token }), 201);
}

/** `/applications/{id}/domains` (or another owner's base) and one domain under it. */
export const domainsPath = (serviceId: string, base = '/applications') => `${base}/${serviceId}/domains`;
export const domainPath = (serviceId: string, domainId: string, base = '/applications') => `${domainsPath(serviceId, base)}/${domainId}`;

export async function listDomains(s: TestServer, serviceId: string, base = '/applications', token?: string): Promise<Domain[]> {
  return expectStatus(await s.get(`${domainsPath(serviceId, base)}?limit=100`, { token }), 200).data;
}

export async function addDomain(s: TestServer, serviceId: string, body: Record<string, unknown>, base = '/applications', token?: string): Promise<Domain> {
  return expectStatus(await s.post(domainsPath(serviceId, base), body, { token }), 201);
}

export async function systemDomain(s: TestServer, serviceId: string, base = '/applications'): Promise<Domain> {
  const all = await listDomains(s, serviceId, base);
  return all.find((d) => d.type === 'SYSTEM')!;
}

export async function setProgression(s: TestServer, p: { mode: 'immediate' } | { mode: 'reads'; reads: number } | { mode: 'duration'; ms: number }) {
  expectStatus(await s.admin('PUT', '/simulation/progression/domain_verification', p), 200);
}

export async function addFault(s: TestServer, rule: Record<string, unknown>): Promise<{ id: string }> {
  return expectStatus(await s.admin('POST', '/simulation/faults', rule), 201);
}

/**
 * Registers a stand-in service kind on this server (static sites and load balancers are built
 * elsewhere); returns a function that creates services of it for a company.
 */
export function stubKind(s: TestServer, type: string) {
  const services = new Map<string, ServiceSummary & { companyId: string }>();
  s.app.services.register({
    type,
    summaries: async ({ companyId }, ids) =>
      ids.flatMap((id) => {
        const svc = services.get(id);
        return svc && svc.companyId === companyId ? [{ id: svc.id, name: svc.name, display_name: svc.display_name }] : [];
      }),
  });
  return (companyId = s.companyId) => {
    const id = randomUUID();
    const svc = { id, name: `site-${++counter}`, display_name: `Site ${counter}`, companyId };
    services.set(id, svc);
    return svc;
  };
}

/** A self-signed certificate for `names` (the first is the subject) and its key, in PEM. */
export function certificate(names: string[], opts: { expired?: boolean } = {}): { cert: string; key: string } {
  const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = pair.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const publicPem = pair.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicPem);
  cert.serialNumber = '01' + forge.util.bytesToHex(forge.random.getBytesSync(8));
  const now = Date.now();
  cert.validity.notBefore = new Date(now - (opts.expired ? 10 : 1) * 86400_000);
  cert.validity.notAfter = new Date(now + (opts.expired ? -1 : 30) * 86400_000);
  const attrs = [{ name: 'commonName', value: names[0]! }];
  cert.setSubject(attrs);
  cert.setIssuer(attrs);
  cert.setExtensions([{ name: 'subjectAltName', altNames: names.map((value) => ({ type: 2, value })) }]);
  cert.sign(forge.pki.privateKeyFromPem(keyPem), forge.md.sha256.create());
  return { cert: forge.pki.certificateToPem(cert), key: keyPem };
}
