// Webhook events of static sites: STATIC_SITE_CREATE, _UPDATE, _DEPLOY and _DELETE delivered to a
// real receiver with the site's representation (and the deployment for deploy events).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { Receiver, verify } from '../webhooks/support.js';
import { IMMEDIATE_ENV, OP, createSite, deployments, readSite, setProgression, sitePath, trigger } from './support.js';

const TYPES = ['STATIC_SITE_CREATE', 'STATIC_SITE_UPDATE', 'STATIC_SITE_DELETE', 'STATIC_SITE_DEPLOY'];

for (const kind of DB_KINDS) {
  describe(`static sites: events [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, env: { ...IMMEDIATE_ENV, SLIPWAY_WEBHOOK_RETRY_SCALE: '0.00001' }, rateLimits: GENEROUS });
    let rx: Receiver;
    let hook: { id: string; secret: string };
    before(async () => {
      rx = await new Receiver().start();
      hook = expectStatus(await s.post('/webhooks', { allowed_events: TYPES, endpoint: rx.url }), 201);
    });
    after(async () => rx?.close());

    const eventsFor = (id: string, type: string) => rx.received.filter((r) => r.json.type === type && r.json.data.id === id);
    const one = (id: string, type: string) => waitFor(`${type} of ${id}`, () => eventsFor(id, type)[0]);

    it('the sources are registered and name real operations', () => {
      const ids = new Set(s.server.operations.map((o) => o.contract.operationId));
      const sources = s.app.events.registered().filter((x) => x.module === 'static-sites');
      assert.deepEqual(sources.map((x) => x.type).sort(), [...TYPES].sort());
      for (const src of sources) for (const op of src.operations) assert.ok(ids.has(op), `${src.type}: unknown operation ${op}`);
    });

    it('create, deploy (initial, preview, cancelled), update and delete, each with the site as it is', async () => {
      const site = await createSite(s, { display_name: 'Hooked Site' });
      const c = await one(site.id, 'STATIC_SITE_CREATE');
      assert.ok(verify(hook.secret, c.headers, c.body));
      assert.equal(c.json.company_id, s.companyId);
      assert.equal(c.json.data.name, site.name);
      assert.equal(c.json.data.hostname, site.hostname);

      // The initial deployment's outcome.
      const d = await one(site.id, 'STATIC_SITE_DEPLOY');
      const [initial] = await deployments(s, site.id);
      assert.deepEqual(d.json.data.deployment, initial);
      assert.equal(d.json.data.status, 'deploymentSuccess');

      // A preview and a cancelled production deployment each send one.
      const p = await trigger(s, site.id, { is_preview: true, branch: 'feature-a' });
      await waitFor('preview event', () => eventsFor(site.id, 'STATIC_SITE_DEPLOY').find((r) => r.json.data.deployment.id === p.id));
      await setProgression(s, OP, { mode: 'reads', reads: 1000 });
      const x = await trigger(s, site.id);
      expectStatus(await s.post(`${sitePath(site.id)}/deployments/${x.id}/cancel`), 200);
      const cancelled = await waitFor('cancel event', () => eventsFor(site.id, 'STATIC_SITE_DEPLOY').find((r) => r.json.data.deployment.id === x.id));
      assert.equal(cancelled.json.data.deployment.status, 'cancelled');
      assert.equal(cancelled.json.data.status, 'deploymentCancelled');
      await setProgression(s, OP, { mode: 'immediate' });

      expectStatus(await s.patch(sitePath(site.id), { display_name: 'Renamed Site' }), 200);
      const u = await one(site.id, 'STATIC_SITE_UPDATE');
      assert.equal(u.json.data.display_name, 'Renamed Site');
      assert.deepEqual(u.json.data, await readSite(s, site.id));

      expectStatus(await s.delete(sitePath(site.id)), 200);
      const del = await waitFor('STATIC_SITE_DELETE', () => eventsFor(site.id, 'STATIC_SITE_DELETE')[0], 30_000);
      assert.equal(del.json.data.name, site.name);
      assert.equal(del.json.data.status, 'deleting');
      assert.equal((await s.get(sitePath(site.id))).status, 404);
      const recorded = new Set((await s.app.database.db.selectFrom('events').select('id').execute()).map((e) => e.id));
      assert.ok(rx.received.every((r) => recorded.has(r.json.event_id)));
    });
  });
}
