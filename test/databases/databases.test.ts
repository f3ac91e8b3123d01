// Databases: lifecycle, restart, password change, suspension, deletion, external access, IP
// restriction, internal connections, metrics, permissions, tenancy and rate tiers.
import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, waitFor } from '../helpers/util.js';
import {
  IMMEDIATE_ENV,
  OTHER_CLUSTER,
  RESOURCE_TYPE,
  addFault,
  backupAndWait,
  clearProgression,
  createDb,
  dbBody,
  getDb,
  row,
  setProgression,
  waitStatus,
  window,
  write,
} from './support.js';
import { createApp } from '../applications/support.js';
import { DATABASE_RESOURCE_TYPES, DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';

for (const kind of DB_KINDS) {
  describe(`databases [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS, env: IMMEDIATE_ENV });
    afterEach(async () => {
      for (const op of ['database_create', 'restart', 'password_change', 'backup', 'restore', 'database_delete']) await clearProgression(s, op);
    });

    it('creation is asynchronous: 201 with status creating, then ready', async () => {
      await setProgression(s, 'database_create', { mode: 'reads', reads: 2 });
      const c = expectStatus(await s.post('/databases', dbBody()), 201);
      assert.equal(c.status, 'creating');
      assert.equal(c.type, 'postgresql');
      assert.equal(c.version, '17');
      assert.equal(c.is_suspended, false);
      assert.equal(c.resource_type_name, RESOURCE_TYPE.name);
      assert.equal((await getDb(s, c.id)).status, 'creating');
      const d = await waitStatus(s, c.id, 'ready');
      assert.equal(d.cluster_id, DEFAULT_CLUSTER.id);
      assert.equal(d.cpu_limit, RESOURCE_TYPE.cpu_limit);
      assert.equal(d.internal_port, '5432');
      assert.equal(d.external_hostname, null);
    });

    it('create validates cluster, resource type, version and body (400)', async () => {
      expectError(await s.post('/databases', dbBody({ cluster_id: MISSING })), 400, /cluster_id/);
      expectError(await s.post('/databases', dbBody({ extra: { resource_type_id: 'nope' } })), 400, /resource_type_id/);
      expectError(await s.post('/databases', dbBody({ version: '99' })), 400, /version/);
      expectError(await s.post('/databases', dbBody({ type: 'mongodb' })), 400, /does not match the schema/);
      expectError(await s.post('/databases', dbBody({ extra: { db_password: 'bad password!' } })), 400);
    });

    it('the password is never returned and is encrypted at rest', async () => {
      const d = await createDb(s);
      const texts = [(await s.get(`/databases/${d.id}`)).text, (await s.get('/databases?limit=100')).text];
      for (const t of texts) assert.ok(!t.includes('Secret_pass1'), 'password not in responses');
      const r = await row(s, d.id);
      assert.ok(!r.password_enc.includes('Secret_pass1'));
      assert.equal(s.app.secrets.decrypt(r.password_enc), 'Secret_pass1');
    });

    it('lists databases in the paginated envelope', async () => {
      const d = await createDb(s);
      const l = expectStatus(await s.get('/databases?limit=100'), 200);
      assert.ok(l.total >= 1);
      assert.equal(l.limit, 100);
      const item = l.data.find((x: { id: string }) => x.id === d.id);
      assert.equal(item.status, 'ready');
      assert.equal(item.is_suspended, false);
    });

    it('update changes display name and size, counts as a write, validates the resource type', async () => {
      const d = await createDb(s);
      const before = (await row(s, d.id)).data_version;
      const big = DATABASE_RESOURCE_TYPES[2]!;
      const u = expectStatus(await s.patch(`/databases/${d.id}`, { display_name: 'Renamed', resource_type_id: big.id }), 200);
      assert.equal(u.display_name, 'Renamed');
      assert.equal(u.resource_type_name, big.name);
      assert.equal((await getDb(s, d.id)).memory_limit, big.memory_limit);
      assert.equal((await row(s, d.id)).data_version, before + 1);
      expectError(await s.patch(`/databases/${d.id}`, { resource_type_id: 'x' }), 400);
    });

    it('restart: ready -> updating -> ready, data preserved', async () => {
      const d = await createDb(s);
      await write(s, d.id);
      await write(s, d.id);
      const version = (await row(s, d.id)).data_version;
      await setProgression(s, 'restart', { mode: 'reads', reads: 2 });
      assert.match(expectStatus(await s.post(`/databases/${d.id}/restart`), 200).message, /restart/i);
      assert.equal((await getDb(s, d.id)).status, 'updating');
      await waitStatus(s, d.id, 'ready');
      assert.equal((await row(s, d.id)).data_version, version, 'data version unchanged by the restart');
    });

    it('restart alias /restart-database restarts the database', async () => {
      const d = await createDb(s);
      await setProgression(s, 'restart', { mode: 'reads', reads: 2 });
      expectStatus(await s.post(`/databases/${d.id}/restart-database`), 200);
      assert.equal((await getDb(s, d.id)).status, 'updating');
      await waitStatus(s, d.id, 'ready');
    });

    it('restart is refused (400) outside ready/error/passwordChangeFailed/restoringFailed', async () => {
      const d = await createDb(s);
      await setProgression(s, 'restart', { mode: 'reads', reads: 3 });
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      expectError(await s.post(`/databases/${d.id}/restart`), 400, /updat/);
      await waitStatus(s, d.id, 'ready');
      await setProgression(s, 'database_create', { mode: 'reads', reads: 3 });
      const c = expectStatus(await s.post('/databases', dbBody()), 201);
      expectError(await s.post(`/databases/${c.id}/restart`), 400, /being created/);
    });

    it('restart is refused (400) while the database is suspended', async () => {
      const d = await createDb(s);
      expectStatus(await s.post(`/databases/${d.id}/suspend`), 200);
      expectError(await s.post(`/databases/${d.id}/restart`), 400, /suspended/);
      expectStatus(await s.post(`/databases/${d.id}/activate`), 200);
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      await waitStatus(s, d.id, 'ready');
    });

    it('restart is refused (400) while a backup is in progress', async () => {
      const d = await createDb(s);
      await setProgression(s, 'backup', { mode: 'reads', reads: 2 });
      expectStatus(await s.post(`/databases/${d.id}/backups`, { display_name: 'slow' }), 202);
      assert.equal((await row(s, d.id)).backup_status, 'inProgress');
      expectError(await s.post(`/databases/${d.id}/restart`), 400, /backup/);
      await waitFor('backup to finish', async () => (await getDb(s, d.id)) && (await row(s, d.id)).backup_status === 'ready');
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      await waitStatus(s, d.id, 'ready');
    });

    it('restart is allowed from error and brings the database back to ready', async () => {
      const d = await createDb(s);
      await addFault(s, { operation: 'restart', target_id: d.id, remaining: 1 });
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      await waitStatus(s, d.id, 'error');
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      await waitStatus(s, d.id, 'ready');
    });

    it('password change: passwordChange -> ready, new password sealed at rest, counts as a write', async () => {
      const d = await createDb(s);
      const before = await row(s, d.id);
      await setProgression(s, 'password_change', { mode: 'reads', reads: 2 });
      expectStatus(await s.post(`/databases/${d.id}/reset-password`, { new_password: 'N3w_password' }), 200);
      assert.equal((await getDb(s, d.id)).status, 'passwordChange');
      const done = await waitStatus(s, d.id, 'ready');
      assert.ok(!JSON.stringify(done).includes('N3w_password'));
      const after = await row(s, d.id);
      assert.equal(s.app.secrets.decrypt(after.password_enc), 'N3w_password');
      assert.equal(after.data_version, before.data_version + 1);
      expectError(await s.post(`/databases/${d.id}/reset-password`, { new_password: 'a b' }), 400);
    });

    it('password change failure ends in passwordChangeFailed with the old password kept; restart recovers', async () => {
      const d = await createDb(s);
      await addFault(s, { operation: 'password_change', target_id: d.id, remaining: 1 });
      expectStatus(await s.post(`/databases/${d.id}/reset-password`, { new_password: 'N3w_password' }), 200);
      await waitStatus(s, d.id, 'passwordChangeFailed');
      assert.equal(s.app.secrets.decrypt((await row(s, d.id)).password_enc), 'Secret_pass1');
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      await waitStatus(s, d.id, 'ready');
    });

    it('suspend and activate toggle is_suspended', async () => {
      const d = await createDb(s);
      expectStatus(await s.post(`/databases/${d.id}/suspend`), 200);
      assert.equal((await getDb(s, d.id)).is_suspended, true);
      expectStatus(await s.post(`/databases/${d.id}/activate`), 200);
      assert.equal((await getDb(s, d.id)).is_suspended, false);
    });

    it('suspend is refused (400) while creating, updating or backing up', async () => {
      await setProgression(s, 'database_create', { mode: 'reads', reads: 3 });
      const c = expectStatus(await s.post('/databases', dbBody()), 201);
      expectError(await s.post(`/databases/${c.id}/suspend`), 400, /created/);
      await clearProgression(s, 'database_create');
      const d = await createDb(s);
      await setProgression(s, 'restart', { mode: 'reads', reads: 3 });
      expectStatus(await s.post(`/databases/${d.id}/restart`), 200);
      expectError(await s.post(`/databases/${d.id}/suspend`), 400, /updat/);
      await waitStatus(s, d.id, 'ready');
      await setProgression(s, 'backup', { mode: 'reads', reads: 2 });
      expectStatus(await s.post(`/databases/${d.id}/backups`, { display_name: 'b' }), 202);
      expectError(await s.post(`/databases/${d.id}/suspend`), 400, /backup/);
      await waitFor('backup to finish', async () => (await getDb(s, d.id)) && (await row(s, d.id)).backup_status === 'ready');
    });

    it('suspend is refused (400) while deleting; delete goes through deleting and then 404', async () => {
      const d = await createDb(s);
      await setProgression(s, 'database_delete', { mode: 'reads', reads: 2 });
      expectStatus(await s.delete(`/databases/${d.id}`), 200);
      assert.equal((await getDb(s, d.id)).status, 'deleting');
      expectError(await s.post(`/databases/${d.id}/suspend`), 400, /deleted/);
      expectError(await s.delete(`/databases/${d.id}`), 400, /deleted/);
      await waitFor('database removed', async () => (await s.get(`/databases/${d.id}`)).status === 404);
    });

    it('external connection toggle exposes and hides the external address', async () => {
      const d = await createDb(s);
      expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
      const on = await getDb(s, d.id);
      assert.ok(on.external_hostname);
      assert.ok(on.external_port);
      expectStatus(await s.post(`/databases/${d.id}/external-connection/toggle`), 202);
      assert.equal((await getDb(s, d.id)).external_hostname, null);
    });

    it('IP restriction: allowlist or denylist of addresses and CIDR ranges (IPv4/IPv6)', async () => {
      const d = await createDb(s);
      assert.deepEqual(expectStatus(await s.get(`/databases/${d.id}/ip-restriction`), 200), { type: 'allow', is_enabled: false, ip_list: [] });
      const list = ['203.0.113.7', '198.51.100.0/24', '2001:db8::1', '2001:db8::/32'];
      assert.deepEqual(expectStatus(await s.put(`/databases/${d.id}/ip-restriction`, { type: 'allow', is_enabled: true, ip_list: list }), 200), {
        type: 'allow',
        is_enabled: true,
        ip_list: list,
      });
      expectStatus(await s.put(`/databases/${d.id}/ip-restriction`, { type: 'deny', is_enabled: true, ip_list: ['10.0.0.0/8'] }), 200);
      assert.deepEqual(expectStatus(await s.get(`/databases/${d.id}/ip-restriction`), 200), { type: 'deny', is_enabled: true, ip_list: ['10.0.0.0/8'] });
    });

    it('IP restriction rejects invalid addresses and ranges (400)', async () => {
      const d = await createDb(s);
      for (const bad of ['300.1.1.1', '10.0.0.0/33', '2001:db8::/129', 'example.com', '10.0.0.1/8/1', '1.2.3.4/x'])
        expectError(await s.put(`/databases/${d.id}/ip-restriction`, { type: 'allow', is_enabled: true, ip_list: [bad] }), 400, /Invalid IP/);
      expectError(await s.put(`/databases/${d.id}/ip-restriction`, { type: 'both', is_enabled: true, ip_list: [] }), 400);
    });

    it('internal connections: to a database or an application in the same cluster; list and delete', async () => {
      const d = await createDb(s);
      const other = await createDb(s);
      const a = await createApp(s);
      const c1 = expectStatus(await s.post(`/databases/${d.id}/internal-connections`, { target_id: other.id, target_type: 'database' }), 201);
      const c2 = expectStatus(await s.post(`/databases/${d.id}/internal-connections`, { target_id: a.id, target_type: 'app' }), 201);
      const l = expectStatus(await s.get(`/databases/${d.id}/internal-connections`), 200);
      assert.deepEqual(
        l.map((c: any) => [c.id, c.source_type, c.target_type]).sort(),
        [
          [c1.id, 'dbResource', 'dbResource'],
          [c2.id, 'dbResource', 'appResource'],
        ].sort(),
      );
      expectError(await s.post(`/databases/${d.id}/internal-connections`, { target_id: a.id, target_type: 'app' }), 400, /already/);
      expectStatus(await s.delete(`/databases/${d.id}/internal-connections/${c1.id}`), 200);
      expectError(await s.delete(`/databases/${d.id}/internal-connections/${c1.id}`), 404);
      assert.equal(expectStatus(await s.get(`/databases/${d.id}/internal-connections`), 200).length, 1);
    });

    it('internal connections across clusters are refused (400)', async () => {
      const d = await createDb(s);
      const far = await createDb(s, { cluster_id: OTHER_CLUSTER.id });
      expectError(await s.post(`/databases/${d.id}/internal-connections`, { target_id: far.id, target_type: 'database' }), 400, /same cluster/);
      const a = await createApp(s, { extra: { cluster_id: OTHER_CLUSTER.id } });
      expectError(await s.post(`/databases/${d.id}/internal-connections`, { target_id: a.id, target_type: 'app' }), 400, /same cluster/);
      // An id that names nothing is answered like a path id (404).
      expectError(await s.post(`/databases/${d.id}/internal-connections`, { target_id: MISSING, target_type: 'app' }), 404);
    });

    it('metrics: usage and limit series and storage values', async () => {
      const d = await createDb(s);
      const rt = RESOURCE_TYPE;
      for (const m of ['cpu-usage', 'cpu-limit', 'memory-usage', 'memory-limit', 'storage-usage', 'storage-limit']) {
        const series = expectStatus(await s.get(`/databases/${d.id}/metrics/${m}?${window()}`), 200);
        assert.ok(Array.isArray(series) && series.length > 0, m);
      }
      const cpu = expectStatus(await s.get(`/databases/${d.id}/metrics/cpu-limit?${window()}`), 200);
      assert.equal(Math.max(...cpu.map((p: { value: number }) => p.value)), rt.cpu_limit / 1000, 'the limit while the database runs');
      const mem = expectStatus(await s.get(`/databases/${d.id}/metrics/memory-limit?${window()}`), 200);
      assert.equal(Math.max(...mem.map((p: { value: number }) => p.value)), rt.memory_limit * 1024 * 1024);
      const all = expectStatus(await s.get(`/databases/${d.id}/metrics/all-storage`), 200);
      assert.equal(all.value, rt.storage_limit * 1024 * 1024);
      const used = expectStatus(await s.get(`/databases/${d.id}/metrics/used-storage`), 200);
      assert.ok(used.value > 0 && used.value <= all.value);
      const bad = await s.get(`/databases/${d.id}/metrics/cpu-usage?from=2025-01-02T00:00:00Z&to=2025-01-01T00:00:00Z&interval_in_seconds=60`);
      expectError(bad, 400);
      expectError(await s.get(`/databases/${d.id}/metrics/cpu-usage?from=x`), 400);
    });

    it('a Viewer key reads but every write is 403 naming the DATABASE permission', async () => {
      const d = await createDb(s);
      const viewer = (await s.newKey({ role: 'Company Viewer' })).token;
      expectStatus(await s.get('/databases', { token: viewer }), 200);
      expectStatus(await s.get(`/databases/${d.id}`, { token: viewer }), 200);
      expectStatus(await s.get(`/databases/${d.id}/backups`, { token: viewer }), 200);
      expectStatus(await s.get(`/databases/${d.id}/ip-restriction`, { token: viewer }), 200);
      expectStatus(await s.get(`/databases/${d.id}/metrics/all-storage`, { token: viewer }), 200);
      expectError(await s.post('/databases', dbBody(), { token: viewer }), 403, /DATABASE:CREATE/);
      expectError(await s.post(`/databases/${d.id}/restart`, undefined, { token: viewer }), 403, /DATABASE:UPDATE/);
      expectError(await s.patch(`/databases/${d.id}`, { display_name: 'no' }, { token: viewer }), 403, /DATABASE:UPDATE/);
      expectError(await s.post(`/databases/${d.id}/backups`, { display_name: 'no' }, { token: viewer }), 403, /DATABASE:UPDATE/);
      expectError(await s.post(`/databases/${d.id}/external-backups/x.sql.gz/restore`, null, { token: viewer }), 403, /DATABASE:UPDATE/);
      expectError(await s.delete(`/databases/${d.id}`, { token: viewer }), 403, /DATABASE:DELETE/);
    });

    it('another company cannot see the database (404)', async () => {
      const d = await createDb(s);
      const other = await s.newCompany();
      expectError(await s.get(`/databases/${d.id}`, { token: other.token }), 404);
      expectError(await s.post(`/databases/${d.id}/restart`, undefined, { token: other.token }), 404);
      expectError(await s.get(`/databases/${d.id}/backups`, { token: other.token }), 404);
      expectError(await s.post(`/databases/${d.id}/external-backups/x.sql.gz/restore`, null, { token: other.token }), 404);
      expectError(await s.delete(`/databases/${d.id}`, { token: other.token }), 404);
      const l = expectStatus(await s.get('/databases', { token: other.token }), 200);
      assert.equal(l.data.length, 0);
      // A database of another company is no internal connection target either.
      const mine = await createDb(s, { token: other.token });
      expectError(await s.post(`/databases/${mine.id}/internal-connections`, { target_id: d.id, target_type: 'database' }, { token: other.token }), 404);
    });

    it('a key scoped to one database sees only that one', async () => {
      const d = await createDb(s);
      const hidden = await createDb(s);
      const scoped = (await s.newKey({ capabilities: [{ permission: 'DATABASE:READ', id_resource: d.id }] })).token;
      expectStatus(await s.get(`/databases/${d.id}`, { token: scoped }), 200);
      expectError(await s.get(`/databases/${hidden.id}`, { token: scoped }), 404);
      const l = expectStatus(await s.get('/databases?limit=100', { token: scoped }), 200);
      assert.deepEqual(
        l.data.map((x: { id: string }) => x.id),
        [d.id],
      );
    });
  });

  describe(`database rate tiers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, service_creation: 3, service_mutation: 2, general_write: 2 }, env: IMMEDIATE_ENV });

    it('create counts toward the service creation tier', async () => {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(expectStatus(await s.post('/databases', dbBody()), 201).id);
      const r = await s.post('/databases', dbBody());
      expectError(r, 429);
      assert.ok(r.headers.get('retry-after'));
      for (const id of ids) await waitStatus(s, id, 'ready');
    });

    it('restart counts toward the service mutation tier, per database', async () => {
      const [a, b] = await s.app.database.db.selectFrom('databases').select('id').orderBy('created_at').limit(2).execute();
      for (let i = 0; i < 2; i++) {
        expectStatus(await s.post(`/databases/${a!.id}/restart`), 200);
        await waitStatus(s, a!.id, 'ready');
      }
      expectError(await s.post(`/databases/${a!.id}/restart`), 429);
      // The same operation on another database has its own count.
      expectStatus(await s.post(`/databases/${b!.id}/restart`), 200);
      await waitStatus(s, b!.id, 'ready');
      // The IP restriction is a service mutation too (its own operation count).
      expectStatus(await s.put(`/databases/${a!.id}/ip-restriction`, { type: 'allow', is_enabled: false, ip_list: [] }), 200);
      expectStatus(await s.put(`/databases/${a!.id}/ip-restriction`, { type: 'allow', is_enabled: false, ip_list: [] }), 200);
      expectError(await s.put(`/databases/${a!.id}/ip-restriction`, { type: 'allow', is_enabled: false, ip_list: [] }), 429);
    });

    it('backups count toward the general write tier, per company', async () => {
      const [a, b] = await s.app.database.db.selectFrom('databases').select('id').orderBy('created_at').limit(2).execute();
      await backupAndWait(s, a!.id, false);
      await backupAndWait(s, b!.id, false);
      expectError(await s.post(`/databases/${a!.id}/backups`, { display_name: 'over' }), 429);
      const viewerReads = expectStatus(await s.get(`/databases/${a!.id}/backups`), 200);
      assert.equal(viewerReads.length, 1);
    });
  });
}
