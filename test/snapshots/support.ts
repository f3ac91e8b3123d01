// Helpers of the snapshot suites: a server holding one of every resource (made through the API),
// and every GET of the contract over those resources.
import { createProcess, deploy, createApp } from '../processes/support.js';
import { createSite } from '../static-sites/support.js';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { client, createBucket } from '../object-storage/support.js';
import { createPipeline } from '../pipelines/support.js';
import type { Receiver } from '../webhooks/support.js';
import { createDb } from '../databases/support.js';
import type { TestServer } from '../helpers/server.js';
import { expectStatus, listAll, uniqueName } from '../helpers/util.js';

/** Every operation finishes at once. */
export const SNAPSHOT_ENV = { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' };

/** The ids a GET's path parameters take, by the path's first segment and the parameter's name. */
export type Ids = Record<string, string>;

let labels = 0;
const label = () => `${process.pid}-${++labels}`;

/** One of every resource of the API (a bucket with an object) in `s`'s first company; webhook deliveries go to `rx`. Returns the ids. */
export async function populate(s: TestServer, rx: Receiver): Promise<Ids> {
  const ids: Ids = {};
  ids['webhooks'] = expectStatus(await s.post('/webhooks', { allowed_events: ['APP_CREATE', 'APP_UPDATE', 'APP_DEPLOY'], endpoint: rx.url }), 201).id;
  ids['projects'] = expectStatus(await s.post('/projects', { display_name: uniqueName('project') }), 201).id;
  const app = await createApp(s);
  ids['applications'] = app;
  expectStatus(await s.post(`/applications/${app}/env-vars`, { key: 'GREETING', value: 'hello' }), 201);
  expectStatus(await s.post('/applications/global-env-vars', { key: 'DB_URL', value: 'postgres://u:hunter2@db/x' }), 201);
  const proc = await createProcess(s, app, { display_name: 'worker', type: 'worker' });
  ids['applications/process_id'] = proc.id;
  ids['applications/volume_id'] = expectStatus(await s.post(`/applications/${app}/volumes`, { name: 'data', mount_path: '/data', size_gb: 1 }), 201).id;
  ids['applications/deployment_id'] = await deploy(s, app);
  const web = (await listAll<{ id: string; type: string }>(s, `/applications/${app}/processes`)).find((p) => p.type === 'web');
  if (web) {
    expectStatus(await s.post(`/applications/${app}/tcp-proxies`, { process_id: web.id, port: 5432 }), 201);
    expectStatus(await s.post(`/applications/${app}/private-ports`, { process_id: web.id, port: 9000 }), 201);
  }
  ids['applications/domain_id'] = expectStatus(await s.post(`/applications/${app}/domains`, { domain_name: `app-${label()}.example.com` }), 201).id;

  const site = await createSite(s);
  ids['static-sites'] = site.id;
  expectStatus(await s.post(`/static-sites/${site.id}/env-vars`, { key: 'SITE_KEY', value: 'v' }), 201);
  ids['static-sites/domain_id'] = expectStatus(await s.post(`/static-sites/${site.id}/domains`, { domain_name: `site-${label()}.example.com` }), 201).id;

  const db = await createDb(s);
  ids['databases'] = db.id;
  expectStatus(await s.post(`/databases/${db.id}/backups`, { display_name: 'nightly' }), 202);

  ids['docker-registries'] = expectStatus(await s.post('/docker-registries', { name: 'Docker Hub', username: 'me', secret: 'registry-secret' }), 201).id;
  ids['usage-alerts'] = expectStatus(
    await s.post('/usage-alerts', { limit_usd: 12.5, emails: ['ops@example.com'], triggers: [{ percentage: 50 }, { percentage: 90 }] }),
    201,
  ).id;
  ids['pipelines'] = (await createPipeline(s)).id;
  const lb = expectStatus(await s.post('/load-balancers', { display_name: uniqueName('lb') }), 201);
  ids['load-balancers'] = lb.id;
  expectStatus(await s.post(`/load-balancers/${lb.id}/destinations`, { service_type: 'APP', service_id: app, weight: 3 }), 201);
  ids['load-balancers/domain_id'] = expectStatus(await s.post(`/load-balancers/${lb.id}/domains`, { domain_name: `lb-${label()}.example.com` }), 201).id;

  const bucket = await createBucket(s);
  ids['object-storage'] = bucket.id;
  await client(bucket, bucket).send(
    new PutObjectCommand({ Bucket: bucket.bucket_name, Key: 'fixtures/hello.txt', Body: 'hello', ContentType: 'text/plain', Metadata: { from: 'populate' } }),
  );
  expectStatus(await s.post(`/object-storage/${bucket.id}/cors-policies`, { methods: ['GET'], origins: ['*'] }), 201);
  expectStatus(await s.post(`/databases/${db.id}/backup-targets`, { object_storage_id: bucket.id }), 202);

  ids['api-keys'] = (await s.newKey({ role: 'Company Viewer' })).id;
  await s.app.jobs.idle();
  ids['static-sites/deployment_id'] = (await listAll<{ id: string }>(s, `/static-sites/${site.id}/deployments`))[0]!.id;
  const deliveries = await listAll<{ id: string }>(s, `/webhooks/${ids['webhooks']}/deliveries`);
  if (deliveries[0]) ids['webhooks/delivery_id'] = deliveries[0].id;
  return ids;
}

/**
 * The query of an operation that reads a time window (metrics, access logs): one that ended
 * before the first read, so both servers are asked about the same past (the simulated runtime's
 * traffic grows with time).
 */
function windowQuery(params: { in: string; name: string }[], until: number): string {
  const names = new Set(params.filter((p) => p.in === 'query').map((p) => p.name));
  if (!names.has('from')) return '';
  const q = [`from=${new Date(until - 3_600_000).toISOString()}`, `to=${new Date(until).toISOString()}`];
  if (names.has('interval_in_seconds')) q.push('interval_in_seconds=300');
  return `?${q.join('&')}`;
}

/** The paths of every GET of the served document that `ids` can fill (the terminal, a WebSocket, left out). */
export async function getPaths(s: TestServer, ids: Ids): Promise<string[]> {
  const doc = (await s.get('/v3/openapi.json')).body as {
    paths: Record<string, { get?: { parameters?: { in: string; name: string; required?: boolean }[] } }>;
  };
  const out: string[] = [];
  const until = Date.now() - 1000;
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!item.get || path.endsWith('/terminal') || path.startsWith('/auth/device-codes')) continue;
    const base = path.split('/')[1]!;
    let missing = false;
    const filled = path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
      const v = name === 'id' ? ids[base] : ids[`${base}/${name}`];
      if (!v) missing = true;
      return v ?? '';
    });
    if (missing) throw new Error(`no id for ${path}: populate() makes one of every resource`);
    out.push(filled + windowQuery(item.get.parameters ?? [], until));
  }
  return out;
}

/** Status and body of every path, read with `token`. */
export async function readAll(s: TestServer, paths: string[], token: string): Promise<Record<string, { status: number; body: unknown }>> {
  const out: Record<string, { status: number; body: unknown }> = {};
  for (const p of paths) {
    const r = await s.get(p, { token });
    out[p] = { status: r.status, body: r.body };
  }
  return out;
}
