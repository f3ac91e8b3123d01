import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING } from '../helpers/util.js';

const SECRET = 'hunter2-very-secret-token';

const body = (over: Record<string, unknown> = {}) => ({ name: 'Docker Hub', username: 'my-docker-user', secret: SECRET, ...over });

for (const kind of DB_KINDS) {
  describe(`registry credentials [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: GENEROUS });

    const raw = (id: string) => s.app.database.db.selectFrom('docker_registries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('creates, lists, gets, updates and deletes a credential', async () => {
      const c = expectStatus(await s.post('/docker-registries', body()), 201);
      assert.equal(c.name, 'Docker Hub');
      assert.equal(c.registry, 'dockerHub', 'registry defaults to dockerHub');
      assert.equal(c.username, 'my-docker-user');
      assert.equal(c.company_id, s.companyId);
      assert.equal(c.created_at, c.updated_at);

      const l = expectStatus(await s.get('/docker-registries'), 200);
      assert.ok(l.data.some((r: any) => r.id === c.id));
      assert.ok(l.total >= 1);
      assert.deepEqual(expectStatus(await s.get(`/docker-registries/${c.id}`), 200), c);

      const u = expectStatus(await s.patch(`/docker-registries/${c.id}`, { name: 'GHCR', registry: 'github', username: 'octo-cat' }), 200);
      assert.equal(u.name, 'GHCR');
      assert.equal(u.registry, 'github');
      assert.equal(u.username, 'octo-cat');
      assert.ok(u.updated_at >= c.updated_at);
      assert.deepEqual(expectStatus(await s.get(`/docker-registries/${c.id}`), 200), u);

      // An empty body changes nothing.
      assert.deepEqual(expectStatus(await s.patch(`/docker-registries/${c.id}`, {}), 200), u);

      assert.deepEqual(expectStatus(await s.delete(`/docker-registries/${c.id}`), 200), { message: 'Docker registry deleted' });
      expectError(await s.get(`/docker-registries/${c.id}`), 404);
      expectError(await s.delete(`/docker-registries/${c.id}`), 404);
      expectError(await s.patch(`/docker-registries/${MISSING}`, { name: 'x' }), 404);
    });

    it('encrypts the secret at rest and never returns it', async () => {
      const c = await s.post('/docker-registries', body({ registry: 'ecr' }));
      expectStatus(c, 201);
      assert.ok(!c.text.includes(SECRET));
      const row = await raw(c.body.id);
      assert.match(row.secret, /^v1:/);
      assert.ok(!row.secret.includes(SECRET));
      assert.equal(s.app.secrets.decrypt(row.secret), SECRET);

      for (const r of [await s.get(`/docker-registries/${c.body.id}`), await s.get('/docker-registries?limit=100')]) {
        assert.ok(!r.text.includes(SECRET));
        assert.ok(!r.text.includes('secret'));
      }

      const u = await s.patch(`/docker-registries/${c.body.id}`, { secret: 'rotated-secret-42' });
      expectStatus(u, 200);
      assert.ok(!u.text.includes('rotated-secret-42'));
      const after = await raw(c.body.id);
      assert.notEqual(after.secret, row.secret);
      assert.equal(s.app.secrets.decrypt(after.secret), 'rotated-secret-42');
    });

    it('validates the body (400)', async () => {
      for (const b of [
        {},
        body({ name: '' }),
        body({ name: 'x'.repeat(256) }),
        body({ registry: 'quay' }),
        body({ username: '-bad' }),
        body({ username: 'a'.repeat(40) }),
        body({ secret: 'short' }),
        body({ secret: 'x'.repeat(129) }),
        body({ extra: true }),
        { name: 'n', username: 'u' },
      ]) {
        expectError(await s.post('/docker-registries', b), 400);
      }
      const c = expectStatus(await s.post('/docker-registries', body()), 201);
      expectError(await s.patch(`/docker-registries/${c.id}`, { secret: 'short' }), 400);
      expectError(await s.patch(`/docker-registries/${c.id}`, { company_id: s.companyId }), 400);
      expectError(await s.get('/docker-registries/not-a-uuid'), 400);
    });

    it('paginates', async () => {
      const { token } = await s.newCompany();
      for (let i = 0; i < 3; i++) expectStatus(await s.post('/docker-registries', body({ name: `r${i}` }), { token }), 201);
      const p = expectStatus(await s.get('/docker-registries?limit=2&offset=1', { token }), 200);
      assert.equal(p.total, 3);
      assert.deepEqual(
        p.data.map((r: any) => r.name),
        ['r1', 'r2'],
      );
    });

    it('enforces permissions: Viewer reads only, Billing nothing, Developer everything', async () => {
      const c = expectStatus(await s.post('/docker-registries', body()), 201);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      expectStatus(await s.get(`/docker-registries/${c.id}`, { token: viewer.token }), 200);
      expectError(await s.post('/docker-registries', body(), { token: viewer.token }), 403, /REGISTRY_CREDENTIAL:CREATE/);
      expectError(await s.patch(`/docker-registries/${c.id}`, { name: 'x' }, { token: viewer.token }), 403, /REGISTRY_CREDENTIAL:UPDATE/);
      expectError(await s.delete(`/docker-registries/${c.id}`, { token: viewer.token }), 403, /REGISTRY_CREDENTIAL:DELETE/);

      const billing = await s.newKey({ role: 'Company Billing' });
      expectError(await s.get('/docker-registries', { token: billing.token }), 403, /REGISTRY_CREDENTIAL:READ/);
      expectError(await s.post('/docker-registries', body(), { token: billing.token }), 403);

      const dev = await s.newKey({ role: 'Company Developer' });
      const d = expectStatus(await s.post('/docker-registries', body(), { token: dev.token }), 201);
      expectStatus(await s.patch(`/docker-registries/${d.id}`, { name: 'dev' }, { token: dev.token }), 200);
      expectStatus(await s.delete(`/docker-registries/${d.id}`, { token: dev.token }), 200);
    });

    it('scopes a key to one credential', async () => {
      const a = expectStatus(await s.post('/docker-registries', body({ name: 'a' })), 201);
      const b = expectStatus(await s.post('/docker-registries', body({ name: 'b' })), 201);
      const k = await s.newKey({ capabilities: [{ permission: 'REGISTRY_CREDENTIAL:READ', id_resource: a.id }] });
      expectStatus(await s.get(`/docker-registries/${a.id}`, { token: k.token }), 200);
      expectError(await s.get(`/docker-registries/${b.id}`, { token: k.token }), 404);
      const l = expectStatus(await s.get('/docker-registries', { token: k.token }), 200);
      assert.deepEqual(
        l.data.map((r: any) => r.id),
        [a.id],
      );
    });

    it('isolates companies (404)', async () => {
      const c = expectStatus(await s.post('/docker-registries', body()), 201);
      const other = await s.newCompany();
      expectError(await s.get(`/docker-registries/${c.id}`, { token: other.token }), 404);
      expectError(await s.patch(`/docker-registries/${c.id}`, { name: 'x' }, { token: other.token }), 404);
      expectError(await s.delete(`/docker-registries/${c.id}`, { token: other.token }), 404);
      const l = expectStatus(await s.get('/docker-registries', { token: other.token }), 200);
      assert.ok(!l.data.some((r: any) => r.id === c.id));
      expectStatus(await s.get(`/docker-registries/${c.id}`), 200);
    });
  });

  describe(`registry credentials rate tier [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: { ...GENEROUS, general_write: 2 } });

    it('counts writes in the general write tier (429 over the limit)', async () => {
      const c = expectStatus(await s.post('/docker-registries', body()), 201);
      expectStatus(await s.post('/docker-registries', body()), 201);
      const over = await s.post('/docker-registries', body());
      expectError(over, 429);
      assert.ok(over.headers.get('retry-after'));
      // Each operation has its own count; reads are in the read tier.
      expectStatus(await s.patch(`/docker-registries/${c.id}`, { name: 'x' }), 200);
      expectStatus(await s.get(`/docker-registries/${c.id}`), 200);
      assert.equal((await s.get('/docker-registries')).headers.get('x-ratelimit-limit'), '100000');
    });
  });
}
