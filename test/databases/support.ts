// Helpers shared by the database suites: creating databases over HTTP, polling their status, the
// raw row (to prove what the simulated runtime did to the data) and the operator's simulation controls.
import type { TestServer } from '../helpers/server.js';
import { untilStatus } from '../helpers/status.js';
import { expectStatus, uniqueName, waitFor } from '../helpers/util.js';
import { CLUSTERS, DATABASE_RESOURCE_TYPES, DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';

export { DEFAULT_CLUSTER };
export const OTHER_CLUSTER = CLUSTERS.find((c) => c.id !== DEFAULT_CLUSTER.id)!;
export const RESOURCE_TYPE = DATABASE_RESOURCE_TYPES[0]!;
/** Every operation finishes as soon as the job engine runs it; tests switch single operations to `reads`. */
export const IMMEDIATE_ENV = { SLIPWAY_SIM_PROGRESSION: '*=immediate' };

export interface DbOptions {
  type?: string;
  version?: string;
  cluster_id?: string;
  token?: string;
  display_name?: string;
  extra?: Record<string, unknown>;
}

export function dbBody(o: DbOptions = {}) {
  return {
    display_name: o.display_name ?? uniqueName('db'),
    type: o.type ?? 'postgresql',
    version: o.version ?? '17',
    cluster_id: o.cluster_id ?? DEFAULT_CLUSTER.id,
    resource_type_id: RESOURCE_TYPE.id,
    db_name: 'appdata',
    db_password: 'Secret_pass1',
    ...(o.extra ?? {}),
  };
}

/** Creates a database and waits until it is ready. */
export async function createDb(s: TestServer, o: DbOptions = {}) {
  const db = expectStatus(await s.post('/databases', dbBody(o), { token: o.token }), 201);
  await waitStatus(s, db.id, 'ready', o.token);
  return db as { id: string; name: string; type: string; version: string };
}

export async function getDb(s: TestServer, id: string, token?: string) {
  return expectStatus(await s.get(`/databases/${id}`, { token }), 200);
}

export async function waitStatus(s: TestServer, id: string, status: string | string[], token?: string) {
  const want = Array.isArray(status) ? status : [status];
  return untilStatus(`database ${id} to reach ${want.join('/')}`, () => getDb(s, id, token), { statuses: want });
}

/** The stored row: the simulated data version, the sealed password, the operation in progress. */
export async function row(s: TestServer, id: string) {
  return s.app.database.db.selectFrom('databases').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

export async function setProgression(
  s: TestServer,
  operation: string,
  p: { mode: 'immediate' } | { mode: 'reads'; reads: number } | { mode: 'duration'; ms: number },
) {
  expectStatus(await s.admin('PUT', `/simulation/progression/${operation}`, p), 200);
}
export async function clearProgression(s: TestServer, operation: string) {
  await s.admin('DELETE', `/simulation/progression/${operation}`);
}

export async function addFault(s: TestServer, rule: Record<string, unknown>) {
  return expectStatus(await s.admin('POST', '/simulation/faults', rule), 201);
}

/** A write to the database (an update): the simulated data version moves on. */
export async function write(s: TestServer, id: string) {
  expectStatus(await s.patch(`/databases/${id}`, { display_name: uniqueName('written') }), 200);
}

/** Takes a backup (internal or external) and waits for the backup status to be ready again. */
export async function backupAndWait(s: TestServer, id: string, external: false | { name: string; backup_target_id?: string }) {
  if (external) expectStatus(await s.post(`/databases/${id}/external-backups`, external), 202);
  else expectStatus(await s.post(`/databases/${id}/backups`, { display_name: uniqueName('snap') }), 202);
  await waitFor('backup to finish', async () => (await row(s, id)).backup_status === 'ready');
}

export async function addTarget(s: TestServer, id: string, bucket = 'my-bucket') {
  expectStatus(
    await s.post(`/databases/${id}/backup-targets`, { bucket_name: bucket, access_key: 'AKIA1', secret_key: 'secret1', endpoint: 'https://s3.example.com' }),
    202,
  );
  const list = expectStatus(await s.get(`/databases/${id}/backup-targets`), 200) as { id: string; bucket_name: string }[];
  return list.find((t) => t.bucket_name === bucket)!.id;
}

export function window(): string {
  const now = Date.now();
  return `from=${new Date(now - 10 * 60_000).toISOString()}&to=${new Date(now + 60_000).toISOString()}&interval_in_seconds=60`;
}
