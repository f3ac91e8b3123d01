// DATABASE_CREATE, DATABASE_UPDATE and DATABASE_DELETE reach subscribed webhooks, carrying the
// database as GET /databases/{id} shows it (never the password).
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, GENEROUS, skipUnless, useServer } from '../helpers/server.js';
import { expectStatus, waitFor } from '../helpers/util.js';
import { dbBody, waitStatus } from '../databases/support.js';
import { Receiver, verify } from './support.js';

for (const kind of DB_KINDS) {
  describe(`database events [${kind}]`, { skip: await skipUnless(kind) }, () => {
    // The receiver is closed before the server (after hooks run in registration order).
    const rx = new Receiver();
    before(() => rx.start());
    after(() => rx.close());
    const s = useServer({ db: kind, env: { SLIPWAY_SIM_PROGRESSION: '*=immediate', SLIPWAY_JOB_POLL_MS: '20' }, rateLimits: GENEROUS });
    let hook: { id: string; secret: string };
    before(async () => {
      hook = expectStatus(await s.post('/webhooks', { allowed_events: ['DATABASE_CREATE', 'DATABASE_UPDATE', 'DATABASE_DELETE'], endpoint: rx.url }), 201);
    });

    const eventsFor = (id: string, type: string) => rx.received.filter((r) => r.json.type === type && r.json.data.id === id);

    it('create, update, suspend and delete each emit their event with the current database', async () => {
      const created = expectStatus(await s.post('/databases', dbBody()), 201);
      const c = await waitFor('DATABASE_CREATE', () => eventsFor(created.id, 'DATABASE_CREATE')[0]);
      assert.ok(verify(hook.secret, c.headers, c.body));
      assert.equal(c.json.company_id, s.companyId);
      assert.equal(c.json.data.status, 'creating');
      assert.ok(!JSON.stringify(c.json.data).includes('Secret_pass1'), 'the password is never sent');
      await waitStatus(s, created.id, 'ready');

      expectStatus(await s.patch(`/databases/${created.id}`, { display_name: 'renamed database' }), 200);
      const u = await waitFor('DATABASE_UPDATE', () => eventsFor(created.id, 'DATABASE_UPDATE').find((r) => r.json.data.display_name === 'renamed database'));
      const current = expectStatus(await s.get(`/databases/${created.id}`), 200);
      assert.equal(u.json.data.display_name, current.display_name);

      expectStatus(await s.post(`/databases/${created.id}/suspend`), 200);
      await waitFor('suspend event', () => eventsFor(created.id, 'DATABASE_UPDATE').find((r) => r.json.data.is_suspended === true));
      const updates = eventsFor(created.id, 'DATABASE_UPDATE').length;
      expectStatus(await s.post(`/databases/${created.id}/suspend`), 200); // already suspended: no change, no event
      expectStatus(await s.post(`/databases/${created.id}/activate`), 200);
      const activated = await waitFor('activate event', () => eventsFor(created.id, 'DATABASE_UPDATE')[updates]);
      assert.equal(activated.json.data.is_suspended, false);
      await s.app.jobs.idle();
      assert.equal(eventsFor(created.id, 'DATABASE_UPDATE').length, updates + 1);

      expectStatus(await s.delete(`/databases/${created.id}`), 200);
      const d = await waitFor('DATABASE_DELETE', () => eventsFor(created.id, 'DATABASE_DELETE')[0]);
      assert.equal(d.json.data.id, created.id);
      assert.equal((await s.get(`/databases/${created.id}`)).status, 404);
    });

    it('a rejected change emits nothing', async () => {
      const before = rx.received.length;
      const r = await s.post('/databases', dbBody({ cluster_id: '0d3c2b1a-9e8f-4a7b-8c6d-5e4f3a2b1c0d' }));
      assert.equal(r.status, 400);
      await s.app.jobs.idle();
      assert.equal(rx.received.length, before);
    });
  });
}
