// Destinations of load balancers: the five kinds (applications, stand-in static sites and buckets,
// external URLs, other load balancers), toggle and delete, form rules, the limit of 20 (sequential
// and concurrent), routing loops through chains, other companies' and out-of-scope services
// (404), kinds not served yet (400) and what happens when a routed-to service is removed.
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { DB_KINDS, skipUnless, useServer } from '../helpers/server.js';
import { expectError, expectStatus, MISSING, UUID_RE, waitFor } from '../helpers/util.js';
import { outboundUrlProblem } from '../../src/shared/net.js';
import { MAX_DESTINATIONS, removeDestinationsTo } from '../../src/modules/load-balancers/service.js';
import {
  addDestination,
  createApp,
  createLb,
  destinationPath,
  destinations,
  destinationsPath,
  ENV,
  external,
  externalUrl,
  lbPath,
  LIMITS,
  routesTo,
  stubKind,
  type Destination,
} from './support.js';

/** Destination types served by modules being built elsewhere: stand-ins on the test server. */
const STUBBED = [
  { type: 'STATIC_SITE', kind: 'static-site', resource: 'STATIC_SITE', label: 'Static site' },
  { type: 'OBJECT_STORAGE', kind: 'object-storage', resource: 'OBJECT_STORAGE', label: 'Object storage bucket' },
] as const;

for (const kind of DB_KINDS) {
  describe(`load balancer destinations [${kind}]`, { skip: await skipUnless(kind) }, () => {
    const s = useServer({ db: kind, rateLimits: LIMITS, env: ENV });
    let unregistered: string[] = [];
    before(() => {
      unregistered = STUBBED.filter((t) => !s.app.services.get(t.kind)).map((t) => t.type);
    });

    it('an application destination: 201, enabled, weight 100 by default; listed oldest first; service-mutation tier', async () => {
      const lb = await createLb(s);
      const app = await createApp(s);
      const r = await s.post(destinationsPath(lb.id), { service_type: 'APP', service_id: app.id });
      assert.equal(r.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      const d = expectStatus(r, 201) as Destination;
      assert.match(d.id, UUID_RE);
      assert.deepEqual(
        { ...d, id: '', created_at: '', updated_at: '' },
        {
          id: '',
          service_id: app.id,
          service_type: 'APP',
          is_enabled: true,
          weight: 100,
          url: null,
          latitude: null,
          longitude: null,
          created_at: '',
          updated_at: '',
        },
      );
      const ext = await external(s, lb.id, { weight: 0, latitude: -33.86, longitude: 151.21 });
      assert.deepEqual([ext.service_id, ext.weight, ext.latitude, ext.longitude], [null, 0, -33.86, 151.21]);
      const heavy = await addDestination(s, lb.id, { service_type: 'EXTERNAL', url: 'http://203.0.113.10:8080/path?q=1', weight: 10000 });
      assert.deepEqual([heavy.url, heavy.weight], ['http://203.0.113.10:8080/path?q=1', 10000]);
      const list = expectStatus(await s.get(destinationsPath(lb.id)), 200);
      assert.equal(list.total, 3);
      assert.deepEqual(list.data, [d, ext, heavy]);
      const page = expectStatus(await s.get(`${destinationsPath(lb.id)}?limit=1&offset=2`), 200);
      assert.deepEqual([page.total, page.data], [3, [heavy]]);
    });

    it('toggle switches a destination off and on (is_enabled follows); delete answers 204 and it is gone', async () => {
      const lb = await createLb(s);
      const d = await external(s, lb.id);
      const off = await s.post(`${destinationPath(lb.id, d.id)}/toggle`);
      assert.equal(off.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      assert.deepEqual(expectStatus(off, 200), { message: 'Destination disabled' });
      const [stored] = await destinations(s, lb.id);
      assert.equal(stored!.is_enabled, false);
      assert.ok(stored!.updated_at >= d.updated_at);
      assert.deepEqual(expectStatus(await s.post(`${destinationPath(lb.id, d.id)}/toggle`), 200), { message: 'Destination enabled' });
      assert.equal((await destinations(s, lb.id))[0]!.is_enabled, true);

      const del = await s.delete(destinationPath(lb.id, d.id));
      assert.equal(del.headers.get('x-ratelimit-limit'), String(LIMITS.service_mutation));
      expectStatus(del, 204);
      assert.equal(del.text, '');
      assert.deepEqual(await destinations(s, lb.id), []);
      expectError(await s.delete(destinationPath(lb.id, d.id)), 404, 'Destination not found');
      expectError(await s.post(`${destinationPath(lb.id, d.id)}/toggle`), 404, 'Destination not found');
      expectError(await s.post(`${destinationPath(MISSING, d.id)}/toggle`), 404, 'Load balancer not found');
      expectError(await s.delete(destinationPath(lb.id, 'nope')), 400);
    });

    it("a destination is reached only through its own load balancer's path", async () => {
      const a = await createLb(s);
      const b = await createLb(s);
      const d = await external(s, a.id);
      expectError(await s.post(`${destinationPath(b.id, d.id)}/toggle`), 404, 'Destination not found');
      expectError(await s.delete(destinationPath(b.id, d.id)), 404, 'Destination not found');
      assert.deepEqual(await destinations(s, a.id), [d]);
    });

    it('form rules: 400 with a reason, nothing written', async () => {
      const lb = await createLb(s);
      const app = await createApp(s);
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ service_type: 'EXTERNAL', url: 'https://example.com', service_id: app.id }, /service_id must not be given for an EXTERNAL destination/],
        [{ service_type: 'EXTERNAL' }, /url is required for an EXTERNAL destination/],
        [{ service_type: 'EXTERNAL', url: 'example.com' }, /url must be an absolute URL/],
        [{ service_type: 'EXTERNAL', url: 'ftp://example.com/' }, /url must use https:\/\/ or http:\/\//],
        [{ service_type: 'EXTERNAL', url: 'https://user:pw@example.com/' }, /url must not contain credentials/],
        [{ service_type: 'EXTERNAL', url: 'http://169.254.169.254/latest/meta-data' }, /url not allowed: .*link-local/],
        [{ service_type: 'EXTERNAL', url: 'http://metadata.google.internal/' }, /cloud-metadata host/],
        [{ service_type: 'EXTERNAL', url: `https://example.com/${'a'.repeat(2048)}` }, /url must be at most 2048 characters/],
        [{ service_type: 'APP' }, /service_id is required for a APP destination/],
        [{ service_type: 'APP', service_id: app.id, url: 'https://example.com' }, /url is only for EXTERNAL destinations/],
        [{ service_type: 'APP', service_id: app.id, latitude: 10 }, /latitude and longitude must be given together/],
        [{ service_type: 'EXTERNAL', url: 'https://example.com', longitude: 10 }, /latitude and longitude must be given together/],
        [{ service_type: 'APP', service_id: app.id, weight: 10001 }, /schema/],
        [{ service_type: 'APP', service_id: app.id, weight: 1.5 }, /schema/],
        [{ service_type: 'APP', service_id: app.id, latitude: 91, longitude: 0 }, /schema/],
        [{ service_type: 'APP', service_id: app.id, latitude: 0, longitude: -181 }, /schema/],
        [{ service_type: 'DATABASE', service_id: app.id }, /schema/],
        [{ service_type: 'APP', service_id: '' }, /schema/],
        [{ service_id: app.id }, /schema/],
        [{ service_type: 'APP', service_id: app.id, is_enabled: false }, /schema/],
      ];
      for (const [body, message] of cases) expectError(await s.post(destinationsPath(lb.id), body), 400, message);
      expectError(await s.post(destinationsPath(lb.id), undefined), 400);
      assert.deepEqual(await destinations(s, lb.id), []);
      // The same check in production mode: plain http stays allowed, private addresses are not.
      assert.equal(outboundUrlProblem('http://example.com/', true, { label: 'url', httpsInProduction: false }), null);
      assert.match(outboundUrlProblem('http://10.0.0.8/', true, { label: 'url', httpsInProduction: false })!, /private, loopback or reserved/);
      assert.match(outboundUrlProblem('https://[::ffff:127.0.0.1]/', true, { label: 'url', httpsInProduction: false })!, /private, loopback or reserved/);
      assert.equal(outboundUrlProblem('http://10.0.0.8/', false, { label: 'url', httpsInProduction: false }), null);
    });

    it('one target at most once per load balancer (400); the same target on two load balancers is fine', async () => {
      const a = await createLb(s);
      const b = await createLb(s);
      const app = await createApp(s);
      const url = externalUrl();
      const first = await addDestination(s, a.id, { service_type: 'APP', service_id: app.id });
      expectError(
        await s.post(destinationsPath(a.id), { service_type: 'APP', service_id: app.id, weight: 5 }),
        400,
        new RegExp(`already routes to ${app.id} \\(destination ${first.id}\\)`),
      );
      await addDestination(s, a.id, { service_type: 'EXTERNAL', url });
      expectError(await s.post(destinationsPath(a.id), { service_type: 'EXTERNAL', url }), 400, /already routes to/);
      await addDestination(s, b.id, { service_type: 'APP', service_id: app.id });
      await addDestination(s, b.id, { service_type: 'EXTERNAL', url });
      assert.equal((await destinations(s, a.id)).length, 2);
    });

    it('GEO load balancers need a location on every destination; DEFAULT ones take it optionally', async () => {
      const geo = await createLb(s, { type: 'GEO' });
      expectError(
        await s.post(destinationsPath(geo.id), { service_type: 'EXTERNAL', url: externalUrl() }),
        400,
        /GEO load balancer needs latitude and longitude/,
      );
      const d = await external(s, geo.id, { latitude: 48.8566, longitude: 2.3522 });
      assert.deepEqual([d.latitude, d.longitude, d.weight], [48.8566, 2.3522, 100]);
      assert.deepEqual(await destinations(s, geo.id), [d]);
    });

    it(`at most ${MAX_DESTINATIONS} destinations, disabled ones included: the next is 400; a deletion makes room`, async () => {
      const lb = await createLb(s);
      const made: Destination[] = [];
      for (let i = 0; i < MAX_DESTINATIONS; i++) made.push(await external(s, lb.id));
      expectStatus(await s.post(`${destinationPath(lb.id, made[0]!.id)}/toggle`), 200);
      expectError(
        await s.post(destinationsPath(lb.id), { service_type: 'EXTERNAL', url: externalUrl() }),
        400,
        `A load balancer has at most ${MAX_DESTINATIONS} destinations; delete one before adding another`,
      );
      assert.equal(expectStatus(await s.get(destinationsPath(lb.id)), 200).total, MAX_DESTINATIONS);
      expectStatus(await s.delete(destinationPath(lb.id, made[5]!.id)), 204);
      await external(s, lb.id);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'EXTERNAL', url: externalUrl() }), 400, /at most 20/);
    });

    it('25 concurrent creates on one load balancer: exactly 20 succeed, the others are 400', async () => {
      const lb = await createLb(s);
      const results = await Promise.all(Array.from({ length: 25 }, () => s.post(destinationsPath(lb.id), { service_type: 'EXTERNAL', url: externalUrl() })));
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [...Array(20).fill(201), ...Array(5).fill(400)]);
      for (const r of results.filter((x) => x.status === 400)) expectError(r, 400, /at most 20 destinations/);
      const listed = await destinations(s, lb.id);
      assert.equal(listed.length, MAX_DESTINATIONS);
      assert.deepEqual(
        listed.map((d) => d.id).sort(),
        results
          .filter((r) => r.status === 201)
          .map((r) => r.body.id)
          .sort(),
      );
    });

    it('routing loops are refused: itself, and through a chain of three load balancers (enabled or not)', async () => {
      const a = await createLb(s, { display_name: `Loop A ${process.pid}` });
      const b = await createLb(s, { display_name: `Loop B ${process.pid}` });
      const c = await createLb(s, { display_name: `Loop C ${process.pid}` });
      expectError(
        await s.post(destinationsPath(a.id), { service_type: 'LOAD_BALANCER', service_id: a.id }),
        400,
        'A load balancer cannot be a destination of itself',
      );
      const ab = await addDestination(s, a.id, { service_type: 'LOAD_BALANCER', service_id: b.id });
      assert.deepEqual([ab.service_type, ab.service_id, ab.url], ['LOAD_BALANCER', b.id, null]);
      const bc = await addDestination(s, b.id, { service_type: 'LOAD_BALANCER', service_id: c.id });
      expectError(
        await s.post(destinationsPath(c.id), { service_type: 'LOAD_BALANCER', service_id: a.id }),
        400,
        `Adding load balancer ${a.id} as a destination would create a routing loop: ${c.name} -> ${a.name} -> ${b.name} -> ${c.name}`,
      );
      expectError(await s.post(destinationsPath(c.id), { service_type: 'LOAD_BALANCER', service_id: b.id }), 400, /routing loop/);
      // A disabled edge still counts: enabling it again must not close a loop.
      expectStatus(await s.post(`${destinationPath(b.id, bc.id)}/toggle`), 200);
      expectError(await s.post(destinationsPath(c.id), { service_type: 'LOAD_BALANCER', service_id: a.id }), 400, /routing loop/);
      assert.deepEqual(await destinations(s, c.id), []);
      // Not a loop: a second path to the same load balancer (a -> c next to a -> b -> c).
      const ac = await addDestination(s, a.id, { service_type: 'LOAD_BALANCER', service_id: c.id });
      // Cutting one path leaves the other: still a loop. Cutting both allows c -> a.
      expectStatus(await s.delete(destinationPath(b.id, bc.id)), 204);
      expectError(
        await s.post(destinationsPath(c.id), { service_type: 'LOAD_BALANCER', service_id: a.id }),
        400,
        `Adding load balancer ${a.id} as a destination would create a routing loop: ${c.name} -> ${a.name} -> ${c.name}`,
      );
      expectStatus(await s.delete(destinationPath(a.id, ac.id)), 204);
      await addDestination(s, c.id, { service_type: 'LOAD_BALANCER', service_id: a.id });
      expectError(await s.post(destinationsPath(b.id), { service_type: 'LOAD_BALANCER', service_id: c.id }), 400, /routing loop: .* -> .* -> .* -> /);
    });

    it('concurrent a -> b and b -> a: exactly one wins, the other is a loop (400)', async () => {
      for (let round = 0; round < 3; round++) {
        const a = await createLb(s);
        const b = await createLb(s);
        const [x, y] = await Promise.all([
          s.post(destinationsPath(a.id), { service_type: 'LOAD_BALANCER', service_id: b.id }),
          s.post(destinationsPath(b.id), { service_type: 'LOAD_BALANCER', service_id: a.id }),
        ]);
        assert.deepEqual([x.status, y.status].sort(), [201, 400]);
        expectError(x.status === 400 ? x : y, 400, /routing loop/);
        assert.equal((await destinations(s, a.id)).length + (await destinations(s, b.id)).length, 1);
      }
    });

    it("another company's application or load balancer is 404 (nothing written); an unknown one too", async () => {
      const lb = await createLb(s);
      const other = await s.newCompany();
      const theirApp = await createApp(s, other.token);
      const theirLb = await createLb(s, {}, other.token);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'APP', service_id: theirApp.id }), 404);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'LOAD_BALANCER', service_id: theirLb.id }), 404);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'APP', service_id: MISSING }), 404);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'APP', service_id: 'not-an-id' }), 404);
      expectError(await s.post(destinationsPath(theirLb.id), { service_type: 'EXTERNAL', url: externalUrl() }), 404, 'Load balancer not found');
      assert.deepEqual(await destinations(s, lb.id), []);
      assert.deepEqual(await destinations(s, theirLb.id, other.token), []);
    });

    it('scoped keys: the destination service must be visible to the key (404 otherwise)', async () => {
      const lb = await createLb(s);
      const other = await createLb(s);
      const seen = await createApp(s);
      const unseen = await createApp(s);
      const key = await s.newKey({
        capabilities: [
          { permission: 'LOAD_BALANCER:READ', id_resource: lb.id },
          { permission: 'LOAD_BALANCER:UPDATE', id_resource: lb.id },
          { permission: 'APP:READ', id_resource: seen.id },
        ],
      });
      const token = key.token;
      const d = await addDestination(s, lb.id, { service_type: 'APP', service_id: seen.id }, token);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'APP', service_id: unseen.id }, { token }), 404);
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'LOAD_BALANCER', service_id: other.id }, { token }), 404);
      expectError(await s.post(destinationsPath(other.id), { service_type: 'EXTERNAL', url: externalUrl() }, { token }), 404);
      expectError(await s.get(destinationsPath(other.id), { token }), 404);
      assert.deepEqual(await destinations(s, lb.id, token), [d]);
      expectStatus(await s.post(`${destinationPath(lb.id, d.id)}/toggle`, undefined, { token }), 200);
      expectStatus(await s.delete(destinationPath(lb.id, d.id), { token }), 204);
      // Without any APP permission the application is not there for the key either.
      const lbOnly = await s.newKey({ capabilities: [{ permission: 'LOAD_BALANCER:UPDATE' }] });
      expectError(await s.post(destinationsPath(lb.id), { service_type: 'APP', service_id: seen.id }, { token: lbOnly.token }), 404);
      expectStatus(await s.post(destinationsPath(lb.id), { service_type: 'EXTERNAL', url: externalUrl() }, { token: lbOnly.token }), 201);
    });

    it('static sites and buckets: not served yet is a 400 saying so; with their kind registered they are destinations like any service', async () => {
      const lb = await createLb(s);
      for (const type of unregistered)
        expectError(
          await s.post(destinationsPath(lb.id), { service_type: type, service_id: randomUUID() }),
          400,
          new RegExp(`${type} destinations are not available on this server yet`),
        );
      const other = await s.newCompany();
      for (const t of STUBBED) {
        const make = stubKind(s, t.kind);
        const svc = make();
        const d = await addDestination(s, lb.id, { service_type: t.type, service_id: svc.id, weight: 7 });
        assert.deepEqual([d.service_type, d.service_id, d.weight, d.url], [t.type, svc.id, 7, null]);
        expectError(await s.post(destinationsPath(lb.id), { service_type: t.type, service_id: make(other.companyId).id }), 404);
        expectError(await s.post(destinationsPath(lb.id), { service_type: t.type, service_id: randomUUID() }), 404);
        const noRead = await s.newKey({ capabilities: [{ permission: 'LOAD_BALANCER:UPDATE' }, { permission: 'APP:READ' }] });
        expectError(await s.post(destinationsPath(lb.id), { service_type: t.type, service_id: make().id }, { token: noRead.token }), 404);
        // Their modules call removeDestinationsTo when such a service is removed.
        await s.app.database.db.transaction().execute((tx) => removeDestinationsTo(tx, svc.id));
        assert.equal(await routesTo(s, svc.id), 0);
      }
      assert.deepEqual(await destinations(s, lb.id), []);
    });

    it('a removed application stops being a destination of every load balancer; the rest stays', async () => {
      const a = await createLb(s);
      const b = await createLb(s);
      const app = await createApp(s);
      const keep = await createApp(s);
      await addDestination(s, a.id, { service_type: 'APP', service_id: app.id });
      const kept = await addDestination(s, a.id, { service_type: 'APP', service_id: keep.id });
      const ext = await external(s, a.id);
      await addDestination(s, b.id, { service_type: 'APP', service_id: app.id });
      expectStatus(await s.delete(`/applications/${app.id}`), 200);
      await waitFor('the application to be removed', async () => (await s.get(`/applications/${app.id}`)).status === 404);
      assert.deepEqual(await destinations(s, a.id), [kept, ext]);
      assert.deepEqual(await destinations(s, b.id), []);
      assert.equal(await routesTo(s, app.id), 0);
      // The load balancers themselves are untouched, and accept new destinations.
      expectStatus(await s.get(lbPath(a.id)), 200);
      await external(s, b.id);
    });
  });
}
