// Load balancers: create (generated unique names, system domain, project), get, list (newest
// first, paginated), update (name, routing type, project), delete (destinations, domains and
// project membership go with it), validation, rate tiers, other companies and scoped keys.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, listAll, MISSING, uniqueName, UUID_RE } from '../helpers/util.js';
import { addDestination, createLb, destinationsPath, ENV, external, LB_KEYS, lbPath, LIMITS, type LoadBalancer } from './support.js';

for (const kind of DB_KINDS) {
  describe(`load balancers [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: LIMITS, env: ENV });

    const domainRows = async (serviceId: string) =>
      s.app.database.db.selectFrom('domains').select(['hostname', 'type', 'is_primary']).where('service_id', '=', serviceId).execute();

    it('create: 201 with the contract fields, DEFAULT routing, a generated name and a primary system domain; equal display names get different names', async () => {
      const display = uniqueName('My Balancer');
      const r = await s.post('/load-balancers', { display_name: display });
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_creation), 'service-creation tier');
      const lb = expectStatus(r, 201) as LoadBalancer;
      assert.deepEqual(Object.keys(lb).sort(), LB_KEYS);
      assert.match(lb.id, UUID_RE);
      assert.deepEqual([lb.company_id, lb.project_id, lb.display_name, lb.type], [s.companyId, null, display, 'DEFAULT']);
      assert.equal(lb.name, display.toLowerCase().replace(/ /g, '-'));
      assert.equal(lb.created_at, lb.updated_at);
      const twin = await createLb(s, { display_name: display, type: 'GEO' });
      assert.notEqual(twin.name, lb.name);
      assert.equal(twin.type, 'GEO');

      const domains = expectStatus(await s.get(`${lbPath(lb.id)}/domains`), 200);
      assert.equal(domains.total, 1);
      assert.deepEqual([domains.data[0].type, domains.data[0].is_primary, domains.data[0].status], ['SYSTEM', true, 'ACTIVE']);
      assert.match(domains.data[0].name, new RegExp(`^${lb.name}-[0-9a-f]{6}\\.lb\\.slipway\\.app$`));
      assert.deepEqual(expectStatus(await s.get(lbPath(lb.id)), 200), lb);
    });

    it('create and update refuse bad input with 400 and write nothing', async () => {
      const before = (await listAll(s, '/load-balancers')).length;
      for (const body of [
        {},
        { display_name: 'x' },
        { display_name: 'y'.repeat(65) },
        { display_name: 'Ok name', type: 'ROUND_ROBIN' },
        { display_name: 'Ok name', extra: 1 },
        { display_name: 'Ok name', project_id: 'nope' },
      ])
        expectError(await s.post('/load-balancers', body), 400);
      assert.equal((await listAll(s, '/load-balancers')).length, before);
      const lb = await createLb(s);
      for (const body of [{ display_name: 'x' }, { type: 'geo' }, { name: 'renamed' }, { project_id: 42 }])
        expectError(await s.patch(lbPath(lb.id), body), 400);
      expectError(await s.patch(lbPath(lb.id), undefined), 400);
      assert.deepEqual(expectStatus(await s.get(lbPath(lb.id)), 200), lb);
    });

    it('get, update and delete of an unknown load balancer are 404; a malformed id is 400', async () => {
      expectError(await s.get(lbPath(MISSING)), 404, 'Load balancer not found');
      expectError(await s.patch(lbPath(MISSING), { display_name: 'Renamed' }), 404, 'Load balancer not found');
      expectError(await s.delete(lbPath(MISSING)), 404, 'Load balancer not found');
      expectError(await s.get(destinationsPath(MISSING)), 404, 'Load balancer not found');
      expectError(await s.get(lbPath('not-a-uuid')), 400);
    });

    it('list: newest first, paginated with total', async () => {
      const { token } = await s.newCompany();
      const made = [];
      for (let i = 0; i < 3; i++) made.push(await createLb(s, {}, token));
      const all = expectStatus(await s.get('/load-balancers', { token }), 200);
      assert.equal(all.total, 3);
      assert.deepEqual(
        all.data.map((x: LoadBalancer) => x.id),
        made.map((x) => x.id).reverse(),
      );
      assert.deepEqual(all.data[0], made[2]);
      const page = expectStatus(await s.get('/load-balancers?limit=1&offset=1', { token }), 200);
      assert.deepEqual([page.total, page.limit, page.offset, page.data.map((x: LoadBalancer) => x.id)], [3, 1, 1, [made[1]!.id]]);
      expectError(await s.get('/load-balancers?limit=0', { token }), 400);
    });

    it('update: display name and routing type change, the name stays; service-mutation tier', async () => {
      const lb = await createLb(s);
      const r = await s.patch(lbPath(lb.id), { display_name: 'Renamed balancer', type: 'GEO' });
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      const u = expectStatus(r, 200) as LoadBalancer;
      assert.deepEqual([u.display_name, u.type, u.name, u.created_at], ['Renamed balancer', 'GEO', lb.name, lb.created_at]);
      assert.ok(u.updated_at >= lb.updated_at);
      assert.deepEqual(expectStatus(await s.get(lbPath(lb.id)), 200), u);
      assert.equal((expectStatus(await s.patch(lbPath(lb.id), { type: 'DEFAULT' }), 200) as LoadBalancer).type, 'DEFAULT');
    });

    it('switching to GEO needs a location on every destination (400 naming how many lack one)', async () => {
      const lb = await createLb(s);
      const located = await external(s, lb.id, { latitude: 37.7749, longitude: -122.4194 });
      const bare = await external(s, lb.id);
      expectError(await s.patch(lbPath(lb.id), { type: 'GEO' }), 400, /1 destination\(s\) of this load balancer have no latitude and longitude/);
      assert.equal((expectStatus(await s.get(lbPath(lb.id)), 200) as LoadBalancer).type, 'DEFAULT', 'unchanged');
      expectStatus(await s.delete(`${destinationsPath(lb.id)}/${bare.id}`), 204);
      assert.equal((expectStatus(await s.patch(lbPath(lb.id), { type: 'GEO' }), 200) as LoadBalancer).type, 'GEO');
      assert.deepEqual([located.latitude, located.longitude], [37.7749, -122.4194]);
    });

    it('projects: created in a project, moved, taken out; the project lists it as a load-balancer service', async () => {
      const p1 = expectStatus(await s.post('/projects', { display_name: uniqueName('Proj') }), 201);
      const p2 = expectStatus(await s.post('/projects', { display_name: uniqueName('Proj') }), 201);
      const lb = await createLb(s, { project_id: p1.id });
      assert.equal(lb.project_id, p1.id);
      const services = async (p: string) => expectStatus(await s.get(`/projects/${p}`), 200).services;
      assert.deepEqual(await services(p1.id), [{ id: lb.id, name: lb.name, display_name: lb.display_name, type: 'load-balancer' }]);
      assert.equal((expectStatus(await s.patch(lbPath(lb.id), { project_id: p2.id }), 200) as LoadBalancer).project_id, p2.id);
      assert.deepEqual(await services(p1.id), []);
      assert.equal((await services(p2.id)).length, 1);
      assert.equal((expectStatus(await s.patch(lbPath(lb.id), { project_id: null }), 200) as LoadBalancer).project_id, null);
      assert.deepEqual(await services(p2.id), []);
      // The deletion takes it out of its project. (The contract's add-service operation names no
      // load-balancer type: a load balancer joins a project through its own project_id.)
      expectStatus(await s.patch(lbPath(lb.id), { project_id: p1.id }), 200);
      assert.equal((await services(p1.id)).length, 1);
      expectStatus(await s.delete(lbPath(lb.id)), 204);
      assert.deepEqual(await services(p1.id), []);
      // An unknown project or another company's is the path id's 404.
      expectError(await s.post('/load-balancers', { display_name: 'In nowhere', project_id: MISSING }), 404);
      const other = await s.newCompany();
      const theirs = expectStatus(await s.post('/projects', { display_name: 'Theirs' }, { token: other.token }), 201);
      expectError(await s.post('/load-balancers', { display_name: 'In theirs', project_id: theirs.id }), 404);
      const mine = await createLb(s);
      expectError(await s.patch(lbPath(mine.id), { project_id: theirs.id }), 404);
    });

    it('delete: 204 without a body; its destinations, domains (hostnames freed) and every destination routing to it are gone', async () => {
      const lb = await createLb(s);
      const parent = await createLb(s);
      await external(s, lb.id);
      await addDestination(s, parent.id, { service_type: 'LOAD_BALANCER', service_id: lb.id });
      const custom = expectStatus(await s.post(`${lbPath(lb.id)}/domains`, { domain_name: `lb-${process.pid}-${Date.now()}.example.com` }), 201);
      assert.equal((await domainRows(lb.id)).length, 2);
      const r = await s.delete(lbPath(lb.id));
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      expectStatus(r, 204);
      assert.equal(r.text, '');
      expectError(await s.get(lbPath(lb.id)), 404);
      expectError(await s.get(destinationsPath(lb.id)), 404);
      expectError(await s.get(`${lbPath(lb.id)}/domains`), 404);
      assert.deepEqual(await domainRows(lb.id), []);
      const rows = await s.app.database.db
        .selectFrom('load_balancer_destinations')
        .select('id')
        .where((eb) => eb.or([eb('load_balancer_id', '=', lb.id), eb('service_id', '=', lb.id)]))
        .execute();
      assert.deepEqual(rows, []);
      assert.equal(expectStatus(await s.get(destinationsPath(parent.id)), 200).total, 0);
      // The custom hostname is free again.
      const again = await createLb(s);
      expectStatus(await s.post(`${lbPath(again.id)}/domains`, { domain_name: custom.name }), 201);
      expectError(await s.delete(lbPath(lb.id)), 404);
    });

    it('another company sees none of it (404) and its list is its own', async () => {
      const lb = await createLb(s);
      const other = await s.newCompany();
      const token = other.token;
      expectError(await s.get(lbPath(lb.id), { token }), 404);
      expectError(await s.patch(lbPath(lb.id), { display_name: 'Hijacked' }, { token }), 404);
      expectError(await s.delete(lbPath(lb.id), { token }), 404);
      expectError(await s.get(destinationsPath(lb.id), { token }), 404);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'EXTERNAL', url: 'https://example.com' }, { token }), 404);
      expectError(await s.get(`${lbPath(lb.id)}/domains`, { token }), 404);
      assert.deepEqual(expectStatus(await s.get('/load-balancers', { token }), 200).data, []);
      assert.deepEqual(expectStatus(await s.get(lbPath(lb.id)), 200), lb, 'untouched');
    });

    it('permissions: LOAD_BALANCER:* decide (403 naming the permission); a key scoped to one load balancer sees only it', async () => {
      const a = await createLb(s);
      const b = await createLb(s);
      const viewer = await s.newKey({ role: 'Company Viewer' });
      assert.ok((await listAll(s, '/load-balancers', viewer.token)).some((x) => x.id === a.id));
      expectError(await s.post('/load-balancers', { display_name: 'Nope' }, { token: viewer.token }), 403, /LOAD_BALANCER:CREATE/);
      expectError(await s.patch(lbPath(a.id), { display_name: 'Nope' }, { token: viewer.token }), 403, /LOAD_BALANCER:UPDATE/);
      expectError(await s.delete(lbPath(a.id), { token: viewer.token }), 403, /LOAD_BALANCER:DELETE/);
      expectError(
        await s.post(destinationsPath(a.id), { service_type: 'EXTERNAL', url: 'https://example.com' }, { token: viewer.token }),
        403,
        /LOAD_BALANCER:UPDATE/,
      );
      const billing = await s.newKey({ role: 'Company Billing' });
      expectError(await s.get('/load-balancers', { token: billing.token }), 403, /LOAD_BALANCER:READ/);

      const scoped = await s.newKey({
        capabilities: ['READ', 'UPDATE', 'DELETE'].map((action) => ({ permission: `LOAD_BALANCER:${action}`, id_resource: a.id })),
      });
      const listed = expectStatus(await s.get('/load-balancers', { token: scoped.token }), 200);
      assert.deepEqual([listed.total, listed.data.map((x: LoadBalancer) => x.id)], [1, [a.id]]);
      expectStatus(await s.get(lbPath(a.id), { token: scoped.token }), 200);
      expectError(await s.get(lbPath(b.id), { token: scoped.token }), 404);
      expectError(await s.patch(lbPath(b.id), { display_name: 'Other' }, { token: scoped.token }), 404);
      expectError(await s.delete(lbPath(b.id), { token: scoped.token }), 404);
      expectError(await s.get(destinationsPath(b.id), { token: scoped.token }), 404);
      expectStatus(await s.patch(lbPath(a.id), { display_name: 'Scoped rename' }, { token: scoped.token }), 200);
      expectError(await s.post('/load-balancers', { display_name: 'Nope' }, { token: scoped.token }), 403, /LOAD_BALANCER:CREATE/);
      expectStatus(await s.delete(lbPath(a.id), { token: scoped.token }), 204);
    });
  });
}
