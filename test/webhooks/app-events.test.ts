import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { DEFAULT_CLUSTER } from '../../src/modules/resources/catalog.js';
import { EVENT_TYPES } from '../../src/shared/events.js';
import { Receiver, verify } from './support.js';

for (const kind of DB_KINDS) {
  describe(`application events [${kind}]`, { skip: await skipUnless(kind) }, () => {
    // The receiver is closed before the server (after hooks run in registration order).
    const rx = new Receiver();
    before(() => rx.start());
    after(() => rx.close());
    const s = useServer({ db: kind, env: { SLIPWAY_WEBHOOK_RETRY_SCALE: '0.00001', SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
    let hook: { id: string; secret: string };
    before(async () => {
      hook = expectStatus(await s.post('/webhooks', { allowed_events: ['APP_CREATE', 'APP_UPDATE', 'APP_DELETE', 'APP_DEPLOY'], endpoint: rx.url }), 201);
    });

    const eventsFor = (appId: string, type: string) => rx.received.filter((r) => r.json.type === type && r.json.data.id === appId);
    const one = (appId: string, type: string) => waitFor(`${type} of ${appId}`, () => eventsFor(appId, type)[0]);

    it('the mapping names real operations and covers every application event', () => {
      const ids = new Set(s.server.operations.map((o) => o.contract.operationId));
      const sources = s.app.events.registered();
      for (const src of sources) for (const op of src.operations) assert.ok(ids.has(op), `${src.type}: unknown operation ${op}`);
      for (const t of ['APP_CREATE', 'APP_UPDATE', 'APP_DELETE', 'APP_DEPLOY'])
        assert.ok(
          sources.some((x) => x.type === t),
          t,
        );
      assert.ok(sources.every((x) => (EVENT_TYPES as readonly string[]).includes(x.type)));
    });

    it('APP_CREATE, APP_UPDATE, APP_DEPLOY and APP_DELETE carry the resource as it is', async () => {
      const created = expectStatus(
        await s.post('/applications', { display_name: 'hooked app', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' }),
        201,
      );
      const c = await one(created.id, 'APP_CREATE');
      assert.ok(verify(hook.secret, c.headers, c.body));
      const current = expectStatus(await s.get(`/applications/${created.id}`), 200);
      assert.deepEqual(c.json.data, { ...current, location: DEFAULT_CLUSTER.location });
      assert.equal(c.json.company_id, s.companyId);
      assert.ok(Date.parse(c.json.timestamp) > 0);

      expectStatus(await s.patch(`/applications/${created.id}`, { display_name: 'renamed app' }), 200);
      const u = await one(created.id, 'APP_UPDATE');
      assert.equal(u.json.data.display_name, 'renamed app');
      assert.notEqual(u.json.event_id, c.json.event_id);

      expectStatus(await s.post(`/applications/${created.id}/suspend`), 200);
      await waitFor('suspend event', () => eventsFor(created.id, 'APP_UPDATE').find((r) => r.json.data.is_suspended === true));
      expectStatus(await s.post(`/applications/${created.id}/activate`), 200);
      await waitFor('activate event', () => eventsFor(created.id, 'APP_UPDATE').find((r) => r.json.data.is_suspended === false && r !== u));

      const dep = expectStatus(await s.post(`/applications/${created.id}/deployments`, {}), 200);
      const d = await waitFor('APP_DEPLOY', () => eventsFor(created.id, 'APP_DEPLOY')[0], 30_000);
      assert.equal(d.json.data.deployment.id, dep.id);
      assert.ok(['success', 'failed'].includes(d.json.data.deployment.status));
      const depNow = expectStatus(await s.get(`/applications/${created.id}/deployments/${dep.id}`), 200);
      assert.deepEqual(d.json.data.deployment, depNow);
      assert.equal(d.json.data.status, depNow.status === 'success' ? 'deploymentSuccess' : 'deploymentFailed');

      expectStatus(await s.delete(`/applications/${created.id}`), 200);
      const del = await waitFor('APP_DELETE', () => eventsFor(created.id, 'APP_DELETE')[0], 30_000);
      assert.equal(del.json.data.name, current.name);
      assert.equal((await s.get(`/applications/${created.id}`)).status, 404);
      // Every received event is a recorded event.
      const recorded = new Set((await s.app.database.db.selectFrom('events').select('id').execute()).map((e) => e.id));
      assert.ok(rx.received.every((r) => recorded.has(r.json.event_id)));
    });

    it('cloning emits APP_CREATE for the clone', async () => {
      const src = expectStatus(
        await s.post('/applications', { display_name: 'clone source', cluster_id: DEFAULT_CLUSTER.id, source: 'dockerImage', docker_image: 'nginx:1.27' }),
        201,
      );
      const clone = expectStatus(await s.post(`/applications/${src.id}/clone`, { display_name: 'the clone' }), 201);
      const c = await one(clone.id, 'APP_CREATE');
      assert.equal(c.json.data.display_name, 'the clone');
    });
  });
}
