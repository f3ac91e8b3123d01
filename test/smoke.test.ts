import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from './helpers/server.js';

for (const kind of DB_KINDS) {
  describe(`smoke [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind });

    it('serves health and the OpenAPI document', async () => {
      assert.equal((await s.get('/healthz')).status, 200);
      const r = await s.get('/v3/openapi.json', { token: null });
      assert.equal(r.status, 200);
      assert.equal(r.body.info.version, '1.0.0');
      assert.equal(r.body.servers[0].url, `${s.baseUrl}/v3`);
    });

    it('creates and lists a project', async () => {
      const c = await s.post('/projects', { display_name: 'Smoke' });
      assert.equal(c.status, 201);
      const l = await s.get('/projects');
      assert.equal(l.status, 200);
      assert.ok(l.body.data.some((p: { id: string }) => p.id === c.body.id));
    });
  });
}
